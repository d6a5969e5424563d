"""'Did you mean …?' for names the user almost got right."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str]) -> str | None:
    options = [str(c) for c in choices]
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not found:
        found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        found = [lowered[f] for f in found]
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Text to append to a message: ' Did you mean `x`?' or ''."""
    best = closest(word, choices)
    return f" Did you mean {best!r}?" if best else ""
