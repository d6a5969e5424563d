"""The command's output on its way out of the launcher: to the launcher's standard output (the
pod's log, which the container runtime reads) and, with --log-dir, to the replica's shipped log
on the artifact store. Standard library only and Python 3.8+, like launcher.py, beside which it
is shipped (the same ConfigMap, the same run-directory folder).

Bytes move in the kernel where Linux allows it, so a chatty replica does not pay for a copy
through Python: splice(2) from the command's pipe to a standard output that is a pipe, and
tee(2) then splice(2) when the log is shipped too (tee duplicates a pipe's contents into another
pipe; splice moves them on into the log file). Where either end is not a pipe (a terminal, a
regular file, a kernel without them) it falls back to read and write.

The shipped log is rotated as a local run's logs are (trainstack.local.logcap: the same size
limit and number of rotations kept, `x.log.1` the newest rotation), by renaming: the launcher
holds the only descriptor, so nothing is lost at a rotation. It is flushed (fsync) every
FLUSH_SECONDS while it grows and when the launcher ends: on an OSS volume (ossfs) a flush is
when the object is uploaded, so a replica killed outright loses at most that much of it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time

MARK = b"[trainstack] "
CHUNK = 1 << 20
# A local run's log rotates at this size and keeps this many rotations (trainstack.local.logcap
# takes its defaults from here, so a shipped log and a local one are kept alike).
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_KEEP = 2
FLUSH_SECONDS = 30.0
_SPLICE_F_MOVE = 1
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, named in the fcntl module only from Python 3.10
# splice/tee refuse these ends (not a pipe, a file opened with O_APPEND on old kernels, no
# support at all): the bytes then go by read and write.
_NOT_SPLICEABLE = (errno.EINVAL, errno.ENOSYS, errno.EBADF, errno.ESPIPE, errno.EOPNOTSUPP)


class quiet:
    """`contextlib.suppress(*kinds)` (default OSError), without importing contextlib: the
    launcher's imports are paid at every replica start."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds or (OSError,)

    def __enter__(self) -> quiet:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


def write_all(fd: int, data: bytes, strict: bool = False) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            if strict:
                raise
            return  # a closed stdout: the command's output has nowhere to go, it still runs
        view = view[n:]


def widen(fd: int) -> None:
    """Give the command's output pipe a 1 MiB buffer (Linux F_SETPIPE_SZ; the default is 64 KiB),
    so that a chatty command waits on the launcher less often."""
    with quiet(OSError, ImportError):
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, CHUNK)


class _Kernel:
    """splice(2) and tee(2) through libc (os.splice exists only from Python 3.10; tee not at
    all). `ok` is False where libc lacks them."""

    def __init__(self) -> None:
        self.ok = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._splice = libc.splice
            self._tee = libc.tee
        except (OSError, AttributeError):
            return
        self._splice.restype = ctypes.c_ssize_t
        self._splice.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
        ]
        self._tee.restype = ctypes.c_ssize_t
        self._tee.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
        self.ok = True

    def splice(self, src: int, dst: int, size: int) -> int:
        while True:
            n = self._splice(src, None, dst, None, size, _SPLICE_F_MOVE)
            if n >= 0:
                return int(n)
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))

    def tee(self, src: int, dst: int, size: int) -> int:
        while True:
            n = self._tee(src, dst, size, 0)
            if n >= 0:
                return int(n)
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))


class ShippedLog:
    """DIR/<key>.log, appended to as output passes, rotated past `limit` bytes keeping `keep`
    rotations. Failing to write it (a store that went away, a full volume) is said once on
    standard output and not retried, so the replica runs on as it would without it."""

    def __init__(self, folder: str, key: str, limit: int, keep: int) -> None:
        self.path = os.path.join(folder, key + ".log")
        self.limit = limit
        self.keep = keep
        self.fd: int | None = None
        self.size = 0
        self.unflushed = False
        self.flushed_at = time.monotonic()
        try:
            os.makedirs(folder, exist_ok=True)
            self._open()
        except OSError as err:
            self.broken(err)

    def _open(self) -> None:
        # Not O_APPEND: splice(2) refuses a file opened for appending (EINVAL), and the
        # launcher is the log's only writer; a restarted container's launcher goes on at the end.
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        self.size = os.lseek(self.fd, 0, os.SEEK_END)

    def make_room(self, incoming: int) -> None:
        """Rotate first if `incoming` more bytes would take the log past its limit."""
        if self.fd is None or self.limit <= 0 or self.size + incoming <= self.limit:
            return
        if self.size == 0:
            return  # one write larger than the limit: it goes in whole, the next rotates
        os.close(self.fd)
        self.fd = None
        if self.keep <= 0:
            os.unlink(self.path)
        else:
            for n in range(self.keep - 1, 0, -1):
                older = f"{self.path}.{n}"
                if os.path.exists(older):
                    os.replace(older, f"{self.path}.{n + 1}")
            os.replace(self.path, self.path + ".1")
        self._open()

    def append(self, data: bytes) -> None:
        if self.fd is None:
            return
        try:
            self.make_room(len(data))
            if self.fd is not None:
                write_all(self.fd, data, strict=True)
                self.grew(len(data))
        except OSError as err:
            self.broken(err)

    def grew(self, n: int) -> None:
        self.size += n
        self.unflushed = True
        if time.monotonic() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.flushed_at = time.monotonic()
        if self.fd is None or not self.unflushed:
            return
        self.unflushed = False
        try:
            os.fsync(self.fd)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EROFS):  # a file that cannot be synced
                self.broken(err)

    def close(self) -> None:
        self.flush()
        if self.fd is not None:
            with quiet():
                os.close(self.fd)
            self.fd = None

    def broken(self, err: OSError) -> None:
        if self.fd is not None:
            with quiet():
                os.close(self.fd)
        self.fd = None
        text = f"cannot write {self.path}: {err}; the log is not kept\n"
        write_all(1, MARK + text.encode("utf-8", "replace"))


class Output:
    """Standard output (fd 1) and, when given, the shipped log: where the launcher's own lines
    and the command's output go, in the order they come."""

    def __init__(self, log: ShippedLog | None) -> None:
        self.log = log
        self.kernel = _Kernel()
        self.splice_log = True

    def say(self, text: str) -> None:
        self.write(MARK + text.encode("utf-8", "replace") + b"\n")

    def write(self, data: bytes) -> None:
        write_all(1, data)
        if self.log is not None:
            self.log.append(data)

    def move(self, src: int) -> int:
        """Move what is in the pipe `src` (it is readable) on; the bytes moved, 0 at its end."""
        if self.kernel.ok:
            try:
                return self._splice(src)
            except OSError as err:
                if err.errno not in _NOT_SPLICEABLE:
                    raise
                self.kernel.ok = False  # this stdout (or log) takes no splice: read and write
        data = os.read(src, CHUNK)
        if data:
            self.write(data)
        return len(data)

    def _splice(self, src: int) -> int:
        log = self.log if self.log is not None and self.log.fd is not None else None
        if log is None:
            try:
                return self.kernel.splice(src, 1, CHUNK)
            except OSError as err:
                if err.errno == errno.EPIPE:  # nobody reads our stdout: drop, run on
                    return len(os.read(src, CHUNK)) or 0
                raise
        try:
            n = self.kernel.tee(src, 1, CHUNK)
        except OSError as err:
            if err.errno != errno.EPIPE:
                raise
            data = os.read(src, CHUNK)
            log.append(data)
            return len(data)
        if n == 0:
            return 0
        self._into_log(log, src, n)
        return n

    def _into_log(self, log: ShippedLog, src: int, n: int) -> None:
        """Move `n` bytes, already copied to stdout by tee, from the pipe into the log; what the
        log does not take still leaves the pipe, or stdout would see it twice."""
        left = n
        if self.splice_log:
            try:
                log.make_room(n)
                while left and log.fd is not None:
                    moved = self.kernel.splice(src, log.fd, left)
                    if moved == 0:
                        break
                    left -= moved
                    log.grew(moved)
            except OSError as err:
                if err.errno in _NOT_SPLICEABLE:
                    self.splice_log = False  # a file system without splice: write instead
                else:
                    log.broken(err)
        while left > 0:
            data = os.read(src, min(left, CHUNK))
            if not data:
                break
            left -= len(data)
            log.append(data)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
