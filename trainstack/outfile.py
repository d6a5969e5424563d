"""Writing a file the user named on the command line (a report, a chart, a CSV export, a mirrored
CRD).

The folder is created as needed; the file is written beside its target and renamed over it, so a
failed or interrupted write never leaves half a file in place of a good one; a place that cannot
be written (read-only, under a file, a full disk) is one ``UserError`` naming the path.

Only a regular file is ever replaced. rename(2) replaces whatever directory entry is at the
target: as root, `report -o /dev/null` would turn the device node into a regular file, and any
user's `-o link` would replace the link itself (not write where it points). Anything else at the
target — a symlink, a device, a FIFO, a socket, a directory — is refused before anything is
written, and checked again (lstat, which never follows a link) just before the rename. The
partial file is created with O_EXCL | O_NOFOLLOW, so a link planted under its name is not
written through.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from trainstack.errors import UserError


def write_file(path: Path, data: bytes | str) -> Path:
    return write_chunks(path, [data.encode("utf-8") if isinstance(data, str) else data])


def write_chunks(path: Path, chunks: Iterable[bytes]) -> Path:
    """`write_file` of what `chunks` yields, never all of it in memory at once (a whole log)."""
    partial = path.with_name(f".{path.name}.trainstack-partial")
    refuse_unless_regular(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with contextlib.suppress(FileNotFoundError):
                # A partial left by an interrupted write (unlink never follows a link).
                if not stat.S_ISDIR(partial.lstat().st_mode):
                    partial.unlink()
            fd = os.open(
                partial,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o666,
            )
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
            refuse_unless_regular(path)
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


def refuse_unless_regular(path: Path) -> None:
    """A UserError when something other than a regular file is at `path` (nothing is fine)."""
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError:
        return  # unreadable parents: the write itself says why
    if stat.S_ISREG(mode):
        return
    raise UserError(
        f"cannot write {path}: it is {_kind(mode)}, not a regular file; refusing to replace it",
        hint="name a new file, or a regular file to overwrite",
    )


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def why_not_written(path: Path, err: OSError) -> str:
    """Why `path` could not be written: mkdir's "File exists" or "Not a directory" said as the
    file that stands where a folder belongs, else the error's own reason."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file, not a folder"
    if path.is_dir():
        return "it is a folder"
    return str(err.strerror or err)
