"""trainstack's standard output when it cannot be written.

`trainstack … > /dev/full` (or a full disk) makes every write fail with ENOSPC, and a closed
descriptor (`>&-`) leaves Python with no `sys.stdout` at all; both escaped as tracebacks. The CLI
writes through `install()`'s stream instead: a write that fails is remembered, so the entry point
can tell a failed standard output from any other OSError and say so in one line on stderr. A
closed descriptor 1 is first pointed at /dev/null, so that no file trainstack opens later (the
registry's SQLite database, a log) is given descriptor 1 and written to by a `print` (POSIX
open(2) returns the lowest free descriptor).
"""

from __future__ import annotations

import errno
import io
import os
import sys

_failure: OSError | None = None


class _Fd1(io.RawIOBase):
    """Descriptor 1, remembering the first write that fails."""

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        global _failure
        try:
            return os.write(1, data)
        except OSError as err:
            _failure = _failure or err
            raise

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return os.isatty(1)


def install() -> bool:
    """Replace the interpreter's standard output with one whose failures are remembered;
    whether descriptor 1 was closed when trainstack started."""
    try:
        os.fstat(1)
        closed = False
    except OSError:
        closed = True
        _to_devnull()
    old = sys.__stdout__
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_Fd1()),
        encoding=old.encoding if old is not None else "utf-8",
        errors=old.errors if old is not None else "strict",
        line_buffering=old.line_buffering if old is not None else False,
    )
    return closed


def failure() -> OSError | None:
    """The first failed write to standard output, if any."""
    return _failure


def abandon() -> str:
    """Stop writing to standard output (what is buffered goes nowhere, so the interpreter's
    flush at exit cannot fail again); the reason it failed, said in a few words."""
    _to_devnull()
    err = _failure
    if err is None:
        return "it is closed"
    if err.errno == errno.ENOSPC:
        return "no space left on the device it writes to"
    return str(err.strerror or err)


def broken_pipe() -> bool:
    """The reader went away (`… | head -1`): not worth a message."""
    return _failure is not None and _failure.errno == errno.EPIPE


def _to_devnull() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:
        os.dup2(fd, 1)
        os.close(fd)
