"""A replica's log and its kept rotations: `x.log`, then `x.log.1` (the newest rotation),
`x.log.2`, ... — the names a local run's logs (local/logcap) and a shipped one (the in-container
launcher's logship.py, which, standard library only, names them alike) use, and the order to
read them in."""

from __future__ import annotations

from pathlib import Path


def rotation(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def chain(path: Path) -> list[Path]:
    """A log and its kept rotations that exist, oldest first (the order to read them in)."""
    older: list[Path] = []
    n = 1
    while (candidate := rotation(path, n)).is_file():
        older.append(candidate)
        n += 1
    return [*reversed(older), *([path] if path.is_file() else [])]
