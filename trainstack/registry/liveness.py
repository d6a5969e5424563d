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
