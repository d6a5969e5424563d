"""Find spec files under paths the user gave (files, or directories searched recursively)."""

from __future__ import annotations

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
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                yield candidate


def _walk(root: Path) -> Iterator[Path]:
    for child in sorted(root.iterdir()):
        if child.is_dir():
            if child.name not in _SKIP_DIRS and not child.is_symlink():
                yield from _walk(child)
        elif child.suffix in SUFFIXES and _looks_like_spec(child):
            yield child


def _looks_like_spec(path: Path) -> bool:
    """Directories hold other YAML too (CI config, Pulumi stacks); only trainstack specs count."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return True  # let the loader report it
    return b"trainstack.dev/" in head
