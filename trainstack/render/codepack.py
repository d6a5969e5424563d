"""A deterministic tar.gz of a local code directory: same files → same bytes → same digest.

Sorted entries, zero mtimes and owners, normalised modes, gzip without a timestamp; caches and
VCS metadata are left out.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache",
                       ".ruff_cache", "node_modules"})
SKIP_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class Pack:
    data: bytes
    digest: str  # first 16 hex digits of the sha256 of data


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        out += [Path(dirpath) / f for f in sorted(filenames) if not f.endswith(SKIP_SUFFIXES)]
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def _stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    return tuple((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                 for p in _files(root))


def archive(root: Path) -> Pack:
    return _archive(root.resolve(), _stamp(root.resolve()))


@lru_cache(maxsize=64)
def _archive(root: Path, stamp: tuple[tuple[str, int, int], ...]) -> Pack:
    # `stamp` keys the cache: a changed file (size or mtime) packs again.
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, _size, _mtime in stamp:
            path = root / rel
            info = tarfile.TarInfo(rel)
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            with path.open("rb") as fh:
                tar.addfile(info, fh)
    data = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    return Pack(data, hashlib.sha256(data).hexdigest()[:16])
