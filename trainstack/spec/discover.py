"""Find spec files under paths the user gave (files, or directories searched recursively)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

SUFFIXES = (".yaml", ".yml")
_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".trainstack"}


def spec_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Yield YAML files under each path in a stable order; files named explicitly always count."""
    seen: set[Path] = set()
    for path in paths:
        candidates = [path] if not path.is_dir() else sorted(_walk(path))
        for candidate in candidates:
            try:
                key = candidate.resolve()
            except (OSError, RuntimeError):  # a symlink loop: the loader reports it
                key = candidate.absolute()
            if key not in seen:
                seen.add(key)
                yield candidate


def _walk(root: Path) -> Iterator[Path]:
    """Depth first, in name order, without recursion (a tree thousands of levels deep is just
    long), never into linked directories (a link to `.` would loop)."""
    stack: list[Iterator[Path]] = [iter(_children(root))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        if child.is_dir():
            if child.name not in _SKIP_DIRS and not child.is_symlink():
                stack.append(iter(_children(child)))
        elif child.suffix in SUFFIXES and _looks_like_spec(child):
            yield child


def _children(directory: Path) -> list[Path]:
    try:
        return sorted(directory.iterdir())
    except OSError:
        return []  # unreadable or vanished: there is nothing in it to validate


def _looks_like_spec(path: Path) -> bool:
    """Directories hold other YAML too (CI config, Pulumi stacks); only trainstack specs count.
    A link that leads nowhere (or in a loop) or an unreadable file is the loader's to report;
    a FIFO, socket or device is skipped: opening a FIFO would wait for a writer forever."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return True
    if not stat.S_ISREG(mode):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return True  # let the loader report it
    return b"trainstack.dev/" in head
