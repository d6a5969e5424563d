"""Parsing JSON that a run's code (or anyone) wrote, within bounds.

Python's `json` recurses once per nesting level (a 100,000-deep array is a RecursionError, which
is not a ValueError) and converts integers of any length (one of 5,000 digits is a ValueError
"Exceeds the limit (4300 digits)", Python 3.11's int max_str_digits, after the conversion has
started). Files in a run directory (metrics.json, usage.jsonl, training_job.json, outputs.json)
must never turn a run's summary into a traceback, so an integer's digits are counted before it is
converted (the decoder's `parse_int` hook), nesting is bounded (the C decoder gives up cleanly at
the interpreter's recursion limit; what parses is checked against `MAX_DEPTH` without recursion),
and every failure is one `BoundedJsonError` (a ValueError, as `json.JSONDecodeError` is) with a
short reason that quotes nothing of the text.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
MAX_DIGITS = 100  # a float64 needs 17 significant digits, an int64 19


class BoundedJsonError(ValueError):
    """The text is not JSON, or is JSON past the bounds; where known, the line and column."""

    def __init__(self, message: str, lineno: int | None = None, colno: int | None = None):
        super().__init__(message)
        self.lineno = lineno
        self.colno = colno


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise BoundedJsonError(f"a number of more than {MAX_DIGITS} digits")
    return int(digits)


def loads(text: str | bytes) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BoundedJsonError(f"not UTF-8 (byte {err.start})") from None
    try:
        doc = json.loads(text, parse_int=_int)
    except BoundedJsonError:
        raise
    except json.JSONDecodeError as err:
        raise BoundedJsonError(f"not valid JSON: {err.msg}", err.lineno, err.colno) from None
    except RecursionError:
        raise BoundedJsonError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # a float's digits past what Python converts
        raise BoundedJsonError(f"not valid JSON: {type(err).__name__}") from None
    if _deeper_than(doc, MAX_DEPTH):
        raise BoundedJsonError(f"nested deeper than {MAX_DEPTH} levels")
    return doc


def _deeper_than(doc: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            if level >= limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return False
