"""Replica logs kept to a size: rotation while a run goes on, and a full disk noticed.

Replicas write straight into their log files (O_APPEND, see procgroup), so the runner cannot
swap the file under them. It rotates the way logrotate's ``copytruncate`` does: when a log
passes the limit, older rotations shift (``x.log.1`` → ``x.log.2``…), the log is copied to
``x.log.1`` and truncated; the replica's next append lands at the new, empty end. Lines written
between the copy and the truncation (a few milliseconds) are lost — the price of not touching the
replica's descriptor. Limits come from the environment:

- ``TRAINSTACK_LOG_MAX_BYTES``: size at which a log rotates (default 256 MiB; 0 turns it off);
- ``TRAINSTACK_LOG_KEEP``: rotations kept (default 2; 0 keeps none: the log is only capped).

So one replica uses at most about ``MAX_BYTES × (KEEP + 1)``, plus what it writes in one check
interval.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainstack.envnames import LOG_KEEP_ENV as KEEP_ENV
from trainstack.envnames import LOG_MAX_BYTES_ENV as MAX_BYTES_ENV
from trainstack.errors import ConfigError
from trainstack.launcher import logship
from trainstack.logfiles import chain as chain
from trainstack.logfiles import rotation as rotation
from trainstack.regularfile import OutsideRootError, dir_within, open_for_writing

# One source for a local log's limits and a shipped one's (the launcher's, in a pod).
DEFAULT_MAX_BYTES = logship.DEFAULT_MAX_BYTES
DEFAULT_KEEP = logship.DEFAULT_KEEP
_CHECK_S = 0.2


@dataclass(frozen=True)
class LogLimits:
    max_bytes: int = DEFAULT_MAX_BYTES  # 0: never rotate
    keep: int = DEFAULT_KEEP

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LogLimits:
        env = os.environ if env is None else env
        return cls(
            _count(env, MAX_BYTES_ENV, DEFAULT_MAX_BYTES), _count(env, KEEP_ENV, DEFAULT_KEEP)
        )


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or len(raw) > 18:
        unit = "bytes" if name == MAX_BYTES_ENV else "files"
        raise ConfigError(
            f"{name}={raw!r}: expected a whole number of {unit}",
            hint=f"for example {name}={default}",
        )
    return int(raw)


def rotate(path: Path, limits: LogLimits, root: Path | None = None) -> bool:
    """Rotate `path` if it has passed the limit; returns whether it did. `root` (the run
    directory; default the log folder's parent) is where no link is followed from: user code
    can replace the log, its rotations or the logs folder with links, and the copy and the
    truncation must never write through one (`regularfile.open_for_writing`)."""
    if limits.max_bytes <= 0:
        return False
    root = path.parent.parent if root is None else root
    try:
        fd = open_for_writing(root, path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        if os.fstat(fd).st_size <= limits.max_bytes:
            return False
        folder = dir_within(root, path.parent)
        try:
            if limits.keep > 0:
                _shift(folder, path.name, limits.keep)
                # O_EXCL|O_CREAT never follows a link (open(2)); the shift left no file there.
                out = os.open(
                    rotation(path, 1).name,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o644,
                    dir_fd=folder,
                )
                try:
                    os.lseek(fd, 0, os.SEEK_SET)
                    while chunk := os.read(fd, 1 << 20):
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(out, view) :]
                finally:
                    os.close(out)
        finally:
            os.close(folder)
        os.ftruncate(fd, 0)
        return True
    finally:
        os.close(fd)


def _shift(folder: int, name: str, keep: int) -> None:
    """x.log.N → x.log.N+1 inside `folder` (renames move links themselves, never their
    targets), dropping the oldest."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{name}.{keep}", dir_fd=folder)
    for n in range(keep - 1, 0, -1):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{name}.{n}", f"{name}.{n + 1}", src_dir_fd=folder, dst_dir_fd=folder)


def disk_full(err: BaseException) -> bool:
    """Whether an error says the disk (or the process's file size limit) is full."""
    from trainstack.registry.dbfile import RegistryFullError

    if isinstance(err, RegistryFullError):
        return True
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    text = str(err)
    return "disk is full" in text or "No space left" in text


class Rotator:
    """A thread that keeps the run's logs within their limits; a copy that fails (a full disk)
    is reported once through `on_error` and the log is truncated instead, so that the disk
    frees up rather than fills."""

    def __init__(
        self,
        paths: Iterable[Path],
        limits: LogLimits,
        on_error: Callable[[str], None],
        root: Path | None = None,
    ) -> None:
        self._paths = tuple(paths)
        self._root = root
        self._limits = limits
        self._on_error = on_error
        self._reported = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="log-rotator", daemon=True)

    def start(self) -> None:
        if self._limits.max_bytes > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.check()  # what the last moments wrote

    def check(self) -> None:
        for path in self._paths:
            root = path.parent.parent if self._root is None else self._root
            try:
                rotate(path, self._limits, root)
            except OutsideRootError as err:
                # A link where the log belongs (user code's doing): neither copied nor
                # truncated; the replica keeps writing into the file it holds open.
                if not self._reported:
                    self._reported = True
                    self._on_error(f"did not rotate {path.name}: {err.strerror}")
            except OSError as err:
                with contextlib.suppress(OSError):
                    fd = open_for_writing(root, path, os.O_WRONLY)
                    try:
                        os.ftruncate(fd, 0)
                    finally:
                        os.close(fd)
                if not self._reported:
                    self._reported = True
                    self._on_error(
                        f"could not rotate {path.name} ({err.strerror or err}); "
                        "truncated it instead"
                    )

    def _loop(self) -> None:
        while not self._stop.wait(_CHECK_S):
            self.check()
