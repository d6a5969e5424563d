"""`spec.torchElastic`'s restarts in place, seen from outside: torchrun's agent (each replica's
command, trainstack.contract.shell.torch_elastic_launch) restarts its worker when the worker
fails or when the rendezvous changes, and the replica's process never exits, so the supervisor
would see nothing. This watches each replica's processes for the agent's workers and reports
each restart of them for the recovery history.

A worker is a process of the replica (its REPLICA_TAG_ENV tag) that carries the agent's
TORCHELASTIC_RUN_ID while its parent does not: the agent sets it, with
TORCHELASTIC_RESTART_COUNT (its restarts so far, `max_restarts - remaining`), in every worker
it starts (torch 2.13 torch/distributed/elastic/agent/server/local_elastic_agent.py:403-429).
The count goes up when the agent restarts a failed worker group and stays when it restarts one
for a rendezvous change (agent/server/api.py:940-970: "membership changes do not count as
retries"). So no restart of a failed worker is missed, even one whose worker lived too short a
time to be seen between two looks; a restart for a rendezvous change is seen as the workers
last seen gone and others running. The agent's children are not ours to wait for: the exit
that ended a worker is unknown here (the replica's log has the agent's word on it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from trainstack import recovery
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.procgroup import REPLICA_TAG_ENV, replica_tag
from trainstack.local.proctags import all_pids
from trainstack.registry.model import Restart

RUN_ID_VAR = b"TORCHELASTIC_RUN_ID"
RESTART_COUNT_VAR = b"TORCHELASTIC_RESTART_COUNT"
# /proc is read at most this often: a restart in place takes a rendezvous (seconds), and one
# pass reads every process's stat.
_EVERY_S = 0.25

_Proc = tuple[int, int]  # (pid, start time in clock ticks): a pid that was reused is another


@dataclass(frozen=True)
class _Seen:
    replica: str | None  # the replica whose tag it carries
    elastic: bool  # carries the agent's TORCHELASTIC_RUN_ID
    restart_count: int | None


@dataclass
class _Workers:
    procs: frozenset[_Proc]
    since: float  # time.time() when first seen
    restart_count: int  # the agent's TORCHELASTIC_RESTART_COUNT when they started


class ElasticWatch:
    """The agents' workers of a run's replicas (`tag`: the supervisor's); `check` returns the
    restarts in place since the last look."""

    def __init__(self, launches: Iterable[ReplicaLaunch], tag: str, max_restarts: int) -> None:
        self._roles = {launch.key: (launch.role, launch.index) for launch in launches}
        self._needles = {
            f"{REPLICA_TAG_ENV}={replica_tag(tag, key)}".encode(): key for key in self._roles
        }
        self._max_restarts = max_restarts
        self._seen: dict[_Proc, _Seen] = {}
        # each replica's last workers: what a change is measured against
        self._workers: dict[str, _Workers] = {}
        self._next = 0.0

    def forget(self, key: str) -> None:
        """The replica was started again (a new attempt): its next workers are its first."""
        self._workers.pop(key, None)

    def check(self) -> list[Restart]:
        now = time.monotonic()
        if now < self._next:
            return []
        self._next = now + _EVERY_S
        out = []
        for key, procs in self._scan().items():
            counts = [c for p in procs if (c := self._seen[p].restart_count) is not None]
            count = max(counts, default=0)
            last = self._workers.get(key)
            # Restarts of failed workers are counted by the agent, so none is missed even when
            # a worker lived too short a time to be seen; a restart for a rendezvous change is
            # seen as workers gone and others running.
            before = last.restart_count if last is not None else 0
            replaced = last is not None and bool(procs - last.procs and last.procs - procs)
            since = last.since if last is not None else None
            if count > before or replaced:
                for n in range(before + 1, count + 1):
                    out.append(self._restart(key, n, since if n == count else None))
                if count == before:
                    out.append(self._restart(key, None, since))
                since = None
            self._workers[key] = _Workers(procs, since or time.time(), max(count, before))
        return out

    def _restart(self, key: str, count: int | None, since: float | None) -> Restart:
        """`count`: the agent's restart that this is (a failed worker group), None for one
        the rendezvous caused; `since`: when the workers it ended were first seen."""
        if count is not None:
            reason = recovery.ELASTIC_FAILED
            why = (
                f"its worker failed; restart {count} of torchElastic.maxRestarts "
                f"{self._max_restarts}"
            )
        else:
            reason = recovery.ELASTIC_REJOINED
            why = "a peer left or joined the rendezvous; torchrun does not count it"
        role, index = self._roles[key]
        now = time.time()
        return Restart(
            at=now,
            role=role,
            index=index,
            exit_code=None,
            reason=reason,
            detail=f"restarted in place by torchrun's elastic agent: {why}",
            ran_seconds=None if since is None else max(0.0, now - since),
            counted=False,
        )

    def _scan(self) -> dict[str, frozenset[_Proc]]:
        """Each replica's current workers (replicas with none left out)."""
        parents: dict[_Proc, int] = {}
        by_pid: dict[int, _Proc] = {}
        for pid in all_pids():
            stat = _stat(pid)
            if stat is None:
                continue
            ppid, start = stat
            proc = (pid, start)
            by_pid[pid] = proc
            parents[proc] = ppid
            seen = self._seen.get(proc)
            # A replica's process that is no worker is looked at again: between fork and exec
            # a worker still has its agent's environment.
            if seen is None or (seen.replica is not None and not seen.elastic):
                self._seen[proc] = self._look(pid)
        self._seen = {p: s for p, s in self._seen.items() if p in parents}
        found: dict[str, set[_Proc]] = {}
        for proc, ppid in parents.items():
            seen = self._seen[proc]
            if seen.replica is None or not seen.elastic:
                continue
            parent = by_pid.get(ppid)
            if parent is not None and self._seen[parent].elastic:
                continue  # what a worker runs, not the worker
            found.setdefault(seen.replica, set()).add(proc)
        return {key: frozenset(procs) for key, procs in found.items()}

    def _look(self, pid: int) -> _Seen:
        try:
            entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return _Seen(None, False, None)
        replica = next((self._needles[e] for e in entries if e in self._needles), None)
        elastic = any(e.startswith(RUN_ID_VAR + b"=") for e in entries)
        count = None
        for e in entries:
            if e.startswith(RESTART_COUNT_VAR + b"="):
                text = e[len(RESTART_COUNT_VAR) + 1 :]
                count = int(text) if text.isdigit() else None
        return _Seen(replica, elastic, count)


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) from /proc/PID/stat (proc(5): fields 4 and 22); None for a
    process that has ended (a zombie its agent has not reaped yet is a worker gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The fields after the command name, which is parenthesised and may hold ") ".
    fields = text[text.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None
