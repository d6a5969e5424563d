"""Reading a file that must be a regular file, whatever is at its path.

Run directories hold what a user's training code wrote (metrics/, usage, logs) and the state home
holds files a person may edit or damage: a FIFO there would block a plain ``open()`` forever, a
directory raises IsADirectoryError. Opening without blocking and checking the opened file (not the
path, which can change between a check and an open) turns both into one ``OSError`` the caller
reports like any other unreadable file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


class NotRegularFileError(OSError):
    """The path names a FIFO, a directory, a device or a socket, not a file."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading; NotRegularFileError (never a hang) when it is not a
    regular file; FileNotFoundError and other OSErrors as ``open`` raises them."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"{_kind(mode)}, not a file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of regular file `path` (at most `limit` + 1 of them, so a caller can tell a
    file over its limit without reading all of it)."""
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def bounded_lines(fh: BinaryIO, limit: int = 64 << 10) -> Iterator[bytes]:
    """The lines of `fh`, a line longer than `limit` bytes in pieces of at most `limit` (a
    damaged file of one multi-gigabyte line never lands in memory whole)."""
    return iter(lambda: fh.readline(limit), b"")


def describe(err: OSError) -> str:
    """An OSError as a message without Python's decoration: 'a FIFO, not a file',
    'Permission denied'."""
    return str(err.strerror or err)
