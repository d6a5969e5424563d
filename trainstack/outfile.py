"""Writing a file the user named on the command line (a report, a chart, a CSV export).

The folder is created as needed; the file is written beside its target and renamed over it, so a
failed or interrupted write never leaves half a file in place of a good one; a place that cannot
be written (read-only, under a file, a full disk) is one ``UserError`` naming the path.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from trainstack.errors import UserError


def write_file(path: Path, data: bytes | str) -> Path:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    partial = path.with_name(f".{path.name}.trainstack-partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(partial, "wb") as out:
                out.write(raw)
            os.replace(partial, path)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise
    except OSError as err:
        raise UserError(
            f"cannot write {path}: {why_not_written(path, err)}",
            hint="name a file in a folder you can write",
        ) from None
    return path


def why_not_written(path: Path, err: OSError) -> str:
    """Why `path` could not be written: mkdir's "File exists" or "Not a directory" said as the
    file that stands where a folder belongs, else the error's own reason."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file, not a folder"
    if path.is_dir():
        return "it is a folder"
    return str(err.strerror or err)
