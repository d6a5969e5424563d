"""Defensive accessors over a raw document that may still hold structure errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard


def section(data: Any, *keys: str) -> dict[str, Any]:
    node = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def items(data: Any, *keys: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, item) for each mapping in the list at keys."""
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, dict):
                yield i, item


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
