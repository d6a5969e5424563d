"""Quoting text that came from a file or a user in a message: short, and safe to print.

A diagnostic names what was wrong (`'abc' is not a number`), and what it quotes comes from files
anyone may have written: the text may be long, hold a secret (a series file linked to an
environment), or carry terminal control sequences (ESC and the C1 controls of ECMA-48) that
rewrite what a terminal shows. A quote is at most `MAX_EXCERPT` characters, every character that
is not printable escaped as Python's `repr` escapes it (`\\x1b`, `\\x9b`, `\\u202e`).
"""

from __future__ import annotations

MAX_EXCERPT = 40


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """`text` quoted ('abc'), at most `limit` characters of it then '…', controls escaped."""
    cut = text[:limit]
    return repr(cut) + ("…" if len(text) > limit else "")


def printable(text: str) -> str:
    """`text` with every non-printable character escaped, unquoted: for user text a message
    shows in full (a description) that must not drive the terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def one_line(text: str) -> str:
    """`text` as one line of a list a script reads line by line: as it is when printable, else
    quoted whole as `excerpt` quotes (a name holding a newline would be read as two names; its
    quoted form names no file, so the script fails on it rather than on the wrong files)."""
    return text if text.isprintable() else repr(text)
