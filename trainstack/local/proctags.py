"""Processes found by a tag in their environment (Linux: /proc): how a local run's replicas and
whatever they started are found again — by the supervisor, by a runner that outlived them, and
before the next run by trainstack.local.leftovers — whatever process group or session they left
for."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from trainstack.envnames import PROCESS_TAG_ENV


def tagged_pids(tag: str, name: str = PROCESS_TAG_ENV) -> list[int]:
    """Live processes of this user whose environment carries `name`=`tag` (Linux: /proc)."""
    needle = f"{name}={tag}".encode()
    found = []
    for pid in all_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # gone, or not ours
        if needle in environ.split(b"\0") and not is_zombie(pid):
            found.append(pid)
    return found


def tags_in_use(name: str = PROCESS_TAG_ENV) -> set[str]:
    """Every value of `name` that a live process of this user carries (one pass over /proc):
    which runs still have processes, found without a scan per run."""
    prefix = f"{name}=".encode()
    found: set[str] = set()
    for pid in all_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        for entry in environ.split(b"\0"):
            if entry.startswith(prefix) and not is_zombie(pid):
                found.add(entry[len(prefix) :].decode("utf-8", "replace"))
    return found


def kill_tagged(tag: str, settle_seconds: float = 5.0, name: str = PROCESS_TAG_ENV) -> int:
    """SIGKILL every process that still carries `tag`, until none is left; returns how many
    were signalled. Rescanning catches a process forked while the sweep ran, and waiting lets
    the kills land: SIGKILL is delivered asynchronously. "None left" takes two scans in a row
    a moment apart: a process in the middle of an exec shows no environment for that instant
    (a replica's `setsid sh -c '...; exec sleep 60'` was missed that way and outlived its pod),
    and what is found is killed at least once, however long a scan took. A killed process
    stops showing its environment while it is still exiting: the sweep ends once every process
    it signalled is gone or a zombie, as a deleted pod's processes are before its next one."""
    count = 0
    deadline = time.monotonic() + settle_seconds
    quiet = 0
    signalled: set[int] = set()
    while True:
        found = tagged_pids(tag, name)
        if not found:
            quiet += 1
            exited = all(is_zombie(pid) for pid in signalled)
            if (quiet >= 2 and exited) or time.monotonic() > deadline:
                return count
            time.sleep(0.02)
            continue
        quiet = 0
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                count += 1
                signalled.add(pid)
        if time.monotonic() > deadline:
            return count
        time.sleep(0.01)


def all_pids() -> Iterator[int]:
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                yield int(entry.name)


def is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # The state follows the parenthesised command name, which may itself contain ") ";
    # Z: exited, not yet reaped; X: being torn down.
    return stat[stat.rfind(")") + 2 :].startswith(("Z", "X"))
