"""'Did you mean …?' for names the user almost got right: the one helper every layer uses (spec,
config, metrics, CLI, registry), so every suggestion is found and worded the same way."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


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


def hint(word: str, choices: Iterable[str], *, show: Callable[[str], str] = repr) -> str | None:
    """A hint of its own ("did you mean 'x'?", the choice as `show` writes it), or None when
    nothing is close."""
    best = closest(word, choices)
    return f"did you mean {show(best)}?" if best else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Text to append to a message: ' Did you mean `x`?' or ''."""
    best = closest(word, choices)
    return f" Did you mean {best!r}?" if best else ""
