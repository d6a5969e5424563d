"""Is the process that runs a run still alive? A pid alone is not enough: pids are reused, so a
runner is identified by its pid together with the time its process started."""

from __future__ import annotations

import os
from dataclasses import dataclass

# psutil's create_time is derived from clock ticks since boot; 1 s covers its rounding while a
# reused pid almost always has a start time further apart than that.
_START_TOLERANCE_S = 1.0


@dataclass(frozen=True)
class RunnerIdentity:
    pid: int
    started_at: float


def process_start_time(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch, as psutil's `create_time` reads it
    (`/proc/<pid>/stat`'s start time in clock ticks after boot, plus `/proc/stat`'s boot time):
    read here without psutil on Linux, so that a run's start does not import it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rfind(b")") + 2 :].split()
        ticks = float(fields[19])
    except FileNotFoundError:
        return None
    except (OSError, IndexError, ValueError):
        return _psutil_start_time(pid)  # no /proc like Linux's: psutil knows the platform
    try:
        return ticks / os.sysconf("SC_CLK_TCK") + _boot_time()
    except (OSError, IndexError, ValueError):
        return _psutil_start_time(pid)


def _boot_time() -> float:
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


def _psutil_start_time(pid: int) -> float | None:
    import psutil  # lazily: `runs list` on an empty registry should not pay for it

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def current_runner() -> RunnerIdentity:
    started = process_start_time(os.getpid())
    assert started is not None
    return RunnerIdentity(os.getpid(), started)


def runner_alive(runner: RunnerIdentity) -> bool:
    import psutil

    try:
        proc = psutil.Process(runner.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        started = float(proc.create_time())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        # Unreadable: never declare a run interrupted on a guess; a later look will tell.
        return True
    return abs(started - runner.started_at) < _START_TOLERANCE_S
