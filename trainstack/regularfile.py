"""Reading a file that must be a regular file, whatever is at its path.

Run directories hold what a user's training code wrote (metrics/, usage, logs) and the state home
holds files a person may edit or damage: a FIFO there would block a plain ``open()`` forever, a
directory raises IsADirectoryError. Opening without blocking and checking the opened file (not the
path, which can change between a check and an open) turns both into one ``OSError`` the caller
reports like any other unreadable file.

A run directory is written by the user's code, which can also leave links in it: a series file
linked to `/proc/self/environ` would have the *reader's* environment (the Pulumi passphrase,
cloud keys) quoted into a summary or a report. `open_within` opens a file below a root without
following any link that leads out of it: the path is resolved, checked to lie under the resolved
root, and then opened one component at a time from the root with ``O_NOFOLLOW`` (open(2)), so a
link swapped in between the check and the open is refused (ELOOP), never followed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO


class NotRegularFileError(OSError):
    """The path names a FIFO, a directory, a device or a socket, not a file."""


class OutsideRootError(OSError):
    """The path is a link (or passes through one) to a place outside the directory it belongs
    to: not followed."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def not_regular(mode: int, path: Path) -> NotRegularFileError:
    """The error for `path`, found to have `mode`, which is not a regular file's."""
    return NotRegularFileError(errno.EINVAL, f"{_kind(mode)}, not a file", str(path))


_BUFFER = 1 << 20


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading; NotRegularFileError (never a hang) when it is not a
    regular file; FileNotFoundError and other OSErrors as ``open`` raises them."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    return _as_regular(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), path)


def _as_regular(fd: int, path: Path) -> BinaryIO:
    """A descriptor opened non-blocking, as a blocking binary file when it is a regular file;
    closed, and NotRegularFileError, when it is not."""
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(mode, path)
        os.set_blocking(fd, True)
        # A 1 MiB buffer: bounded_lines' readline(64 KiB) through the default 8 KiB one reads a
        # long file (a multi-gigabyte usage.jsonl) four times slower.
        return os.fdopen(fd, "rb", buffering=_BUFFER)
    except BaseException:
        os.close(fd)
        raise


def open_within(root: Path, path: Path) -> BinaryIO:
    """`path`, a file below directory `root`, opened as `open_regular` opens it, without
    following a link that leads out of `root` (OutsideRootError); links that stay inside are
    followed, as the user's code may use them."""
    real_root = os.path.realpath(root)
    target = os.path.realpath(path)
    if os.path.commonpath([real_root, target]) != real_root:
        raise _outside(root, path)
    parts = Path(os.path.relpath(target, real_root)).parts
    if parts in ((), (".",)):
        return open_regular(Path(real_root))  # the root itself: a directory, refused as such
    # ELOOP/ENOTDIR on the way: a component became a link after realpath looked at it.
    fd = _descend(
        os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), parts[:-1], root, path
    )
    try:
        try:
            leaf = os.open(
                parts[-1],
                os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=fd,
            )
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise _outside(root, path) from None
            raise
    finally:
        os.close(fd)
    return _as_regular(leaf, path)


def dir_within(root: Path, path: Path) -> int:
    """A descriptor of directory `path` below `root`, reached one component at a time with
    O_NOFOLLOW (open(2)): a link anywhere on the way, even one that stays inside, is an
    OutsideRootError. For writing into a run directory, whose paths user code can replace."""
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).parts
    if rel[:1] == ("..",):
        raise _outside(root, path)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _descend(fd, [p for p in rel if p != "."], root, path)


def _descend(fd: int, parts: Sequence[str], root: Path, path: Path) -> int:
    """From directory descriptor `fd` (taken over), down `parts` one at a time with O_NOFOLLOW:
    the last directory's descriptor; a link on the way is an OutsideRootError."""
    try:
        for part in parts:
            try:
                step = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _outside(root, path) from None
                raise
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_for_writing(root: Path, path: Path, flags: int, mode: int = 0o644) -> int:
    """`path` below `root` opened with `flags` (O_WRONLY, O_APPEND, O_CREAT, …) without following
    any link: its folders as `dir_within` reaches them, the file itself with O_NOFOLLOW, so a
    link put in its place is an OutsideRootError, never written through. Only a regular file is
    returned (O_NONBLOCK while opening: a FIFO there is refused, not waited on)."""
    parent = dir_within(root, path.parent)
    try:
        fd = os.open(
            path.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=parent
        )
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _outside(root, path) from None
        raise
    finally:
        os.close(parent)
    try:
        st_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(st_mode):
            raise NotRegularFileError(errno.EINVAL, f"{_kind(st_mode)}, not a file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_within(root: Path, path: Path, limit: int | None = None) -> bytes:
    """`read_regular` for a file that must stay below `root` (`open_within`)."""
    with open_within(root, path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def _outside(root: Path, path: Path) -> OutsideRootError:
    return OutsideRootError(
        errno.ELOOP, f"a link to a place outside {root}: not followed", str(path)
    )


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of regular file `path` (at most `limit` + 1 of them, so a caller can tell a
    file over its limit without reading all of it)."""
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def bounded_lines(fh: BinaryIO, limit: int = 64 << 10) -> Iterator[bytes]:
    """The lines of `fh` of at most `limit` bytes; a longer line is read through in pieces of
    `limit` and left out whole (a damaged file of one multi-gigabyte line never lands in memory
    whole). Every caller parses a line as one JSON document, which no piece of a longer line
    is: handing it the pieces cost more than reading them (a 3 GiB line: 49,152 failed parses,
    ~1 s)."""
    while line := fh.readline(limit):
        if len(line) < limit or line.endswith(b"\n"):
            yield line
            continue
        while (piece := fh.readline(limit)) and not piece.endswith(b"\n"):
            pass  # the rest of the over-long line, up to and with its newline


def describe(err: OSError) -> str:
    """An OSError as a message without Python's decoration: 'a FIFO, not a file',
    'Permission denied'."""
    return str(err.strerror or err)
