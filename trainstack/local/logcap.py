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
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainstack.errors import ConfigError

MAX_BYTES_ENV = "TRAINSTACK_LOG_MAX_BYTES"
KEEP_ENV = "TRAINSTACK_LOG_KEEP"
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_KEEP = 2
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


def rotate(path: Path, limits: LogLimits) -> bool:
    """Rotate `path` if it has passed the limit; returns whether it did."""
    if limits.max_bytes <= 0:
        return False
    try:
        if path.stat().st_size <= limits.max_bytes:
            return False
    except FileNotFoundError:
        return False
    if limits.keep > 0:
        with contextlib.suppress(FileNotFoundError):
            rotation(path, limits.keep).unlink()
        for n in range(limits.keep - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(rotation(path, n), rotation(path, n + 1))
        shutil.copyfile(path, rotation(path, 1))
    os.truncate(path, 0)
    return True


def disk_full(err: BaseException) -> bool:
    """Whether an error says the disk (or the process's file size limit) is full."""
    from trainstack.registry.store import RegistryFullError

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
        self, paths: Iterable[Path], limits: LogLimits, on_error: Callable[[str], None]
    ) -> None:
        self._paths = tuple(paths)
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
            try:
                rotate(path, self._limits)
            except OSError as err:
                with contextlib.suppress(OSError):
                    os.truncate(path, 0)
                if not self._reported:
                    self._reported = True
                    self._on_error(
                        f"could not rotate {path.name} ({err.strerror or err}); "
                        "truncated it instead"
                    )

    def _loop(self) -> None:
        while not self._stop.wait(_CHECK_S):
            self.check()
