"""Replica processes as process groups: start, signal, sweep — and make sure none outlive us.

Each replica leads its own session, so the terminal's Ctrl-C reaches only the runner, which then
stops replicas in order; a replica is signalled through its process group, which covers the
`sh -c` and everything it started. Processes that leave their group (setsid, daemonizing) are
still found: every replica's environment carries a per-job tag that descendants inherit, and a
sweep kills whatever still carries it. A process that also clears its environment is found
another way where Linux allows it: the `trainstack run` process is a child subreaper
(PR_SET_CHILD_SUBREAPER), so orphans re-parent to it instead of to init, and the final sweep
kills every descendant but the dead man's sidecar. Each replica leader also gets SIGTERM from
the kernel if the runner dies (PR_SET_PDEATHSIG, through util-linux's setpriv), so that even a
runner and sidecar SIGKILLed together leave no leader running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# The tags (trainstack.envnames) and the scans that find tagged processes
# (trainstack.local.proctags, standard library only, so the deadman sidecar loads little); the
# supervisor and runner reach them here.
from trainstack.envnames import PROCESS_TAG_ENV as PROCESS_TAG_ENV
from trainstack.envnames import REPLICA_TAG_ENV as REPLICA_TAG_ENV
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.proctags import all_pids, is_zombie
from trainstack.local.proctags import kill_tagged as kill_tagged
from trainstack.local.proctags import tagged_pids as tagged_pids
from trainstack.local.proctags import tags_in_use as tags_in_use
from trainstack.regularfile import OutsideRootError, open_for_writing


@dataclass
class Replica:
    """One started replica process (the leader of its process group)."""

    launch: ReplicaLaunch
    popen: subprocess.Popen[bytes]
    attempt: int

    @property
    def pid(self) -> int:
        return self.popen.pid


def start(launch: ReplicaLaunch, attempt: int, tag: str, marker: str | None = None) -> Replica:
    launch.log_path.parent.mkdir(parents=True, exist_ok=True)
    # The replica writes straight into its log file: no pipe and no pump between it and the
    # disk, so a chatty replica runs exactly as fast as with `> file`, and its log survives the
    # runner. The terminal view tails these files separately.
    with os.fdopen(_open_log(launch.log_path), "ab", buffering=0) as log:
        if marker:
            log.write(f"[trainstack] {marker}\n".encode())
        popen = subprocess.Popen(
            [*_die_with_runner(), *launch.argv],
            cwd=launch.cwd,
            env={**launch.env, PROCESS_TAG_ENV: tag, REPLICA_TAG_ENV: replica_tag(tag, launch.key)},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return Replica(launch, popen, attempt)


def note(launch: ReplicaLaunch, text: str) -> None:
    """A `[trainstack]` line in the replica's log, as a restart's marker is."""
    with os.fdopen(_open_log(launch.log_path), "ab", buffering=0) as log:
        log.write(f"[trainstack] {text}\n".encode())


def _open_log(path: Path) -> int:
    """The replica's log (logs/<role>-<i>.log of the run directory), opened for appending
    without following a link: user code may have replaced it with one before a restart, and
    the runner must not append through it (`regularfile.open_for_writing`). Such a link is
    removed (unlink(2) removes the link, not its target) and a new log begun."""
    root, flags = path.parent.parent, os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        return open_for_writing(root, path, flags)
    except OutsideRootError:
        if not path.is_symlink():
            raise
        path.unlink()
        return open_for_writing(root, path, flags | os.O_EXCL)


def _die_with_runner() -> list[str]:
    """A prefix that has the kernel send the replica SIGTERM when the runner dies (setpriv
    sets PR_SET_PDEATHSIG and execs the command: same pid, same process group). Without
    setpriv, the sidecar and the next command's sweep are what is left."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


_PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def become_subreaper() -> bool:
    """Make this process the one orphaned descendants re-parent to (Linux 3.4+). Only for a
    process whose children are all trainstack's (the `run` verb): it then reaps strays too."""
    global _subreaper
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _subreaper = False
    return _subreaper


def is_subreaper() -> bool:
    return _subreaper


def reap_adopted(keep: set[int]) -> None:
    """As a subreaper, reap the exited descendants that re-parented to this process. Until they
    are waited for they stay zombies, and a zombie still counts as a member of its process
    group (`kill(-pgid, 0)` succeeds), so a stopped replica would look alive for the whole
    grace period. `keep`: our own children (replica leaders, the sidecar), whose exit codes
    their Popen objects read."""
    if not _subreaper:
        return
    _reap_adopted(os.getpid(), keep)


def _children(pid: int) -> list[int] | None:
    """`pid`'s children, as each of its threads lists them in /proc (Linux 3.5+): a look at a
    few small files, where a scan of every process's stat costs a millisecond or more. None
    where the kernel has no such files (or `pid` is gone)."""
    found: list[int] = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task.name}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
    except OSError:
        return None
    return found


def wait_for_exit(
    popens: Iterable[subprocess.Popen[bytes]], timeout: float, *, poll_every: float | None = None
) -> None:
    """Sleep up to `timeout` seconds, waking as soon as one of these children exits (a pidfd
    per child, Linux 5.3+): the supervisor sees an exit when it happens, not at its next tick.
    The exit is left for the caller's `poll()` to collect. Where no pidfd can be had, a plain
    sleep of `poll_every` (at most `timeout`) stands in."""
    fds: list[int] = []
    try:
        for popen in popens:
            if popen.returncode is None:
                fds.append(os.pidfd_open(popen.pid))
        if fds:
            select.select(fds, [], [], timeout)
            return
    except (AttributeError, OSError):  # no pidfd_open here (an old kernel, not Linux)
        pass
    finally:
        for fd in fds:
            os.close(fd)
    time.sleep(timeout if poll_every is None else min(timeout, poll_every))


def descendants(root: int, exclude: set[int] | None = None) -> list[int]:
    """Live descendants of `root` (Linux: /proc), without the subtrees rooted at `exclude`.
    Every process's parent is read: the children files (`_children`) may miss a process
    forked or exiting while they are read, and this is the sweep that must not."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        ppid = _parent(pid)
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    skip = exclude or set()
    found: list[int] = []
    todo = [p for p in children.get(root, []) if p not in skip]
    while todo:
        pid = todo.pop()
        if not is_zombie(pid):
            found.append(pid)
        todo.extend(p for p in children.get(pid, []) if p not in skip)
    return found


def kill_adopted(exclude: set[int], settle_seconds: float = 5.0) -> int:
    """As a subreaper: SIGKILL every descendant of this process outside `exclude`'s subtrees
    (what left its replica's group and cleared its environment still ends up here), and reap
    those that became our children. Does nothing in a process that is not a subreaper, whose
    descendants may be anyone's."""
    if not _subreaper:
        return 0
    me = os.getpid()
    count = 0
    deadline = time.monotonic() + settle_seconds
    while True:
        found = descendants(me, exclude)
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                count += 1
        _reap_adopted(me, exclude)
        if not found or time.monotonic() > deadline:
            return count
        time.sleep(0.01)


def _reap_adopted(me: int, exclude: set[int]) -> None:
    """Reap `me`'s exited children outside `exclude` (one missed while it exits is reaped at
    the next look)."""
    mine = _children(me)
    if mine is None:
        mine = [pid for pid in all_pids() if _parent(pid) == me]
    for pid in mine:
        if pid not in exclude and is_zombie(pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def replica_tag(tag: str, key: str) -> str:
    return f"{tag}/{key}"


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when the group has no process left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member changed credentials (setuid); the group still exists
    return True


def group_alive(pgid: int) -> bool:
    return signal_group(pgid, 0)
