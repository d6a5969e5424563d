"""The replicas of a local job as processes (trainstack.local.supervisor runs the operator's
policy over them): started in the operator's order, their exits polled, stopped as the kubelet
stops a pod (SIGTERM, the grace period, SIGKILL), the restarts their processes outlive read
(trainstack.local.inplace), the memory limits kept, and the kind's success rule."""

from __future__ import annotations

import secrets
import signal
import subprocess
import time
from collections.abc import Sequence

from trainstack.local import procgroup
from trainstack.local.deadman import DeadmanSwitch
from trainstack.local.exitcodes import normalize
from trainstack.local.inplace import InPlace
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.memlimit import MemoryWatch, OverLimit
from trainstack.local.procgroup import Replica
from trainstack.local.supervision import Observer, Outcome, Policy, _NullObserver
from trainstack.registry.model import ReplicaExit, Restart, RunStatus

# Between two looks at everything that is not a replica's exit (a stop request, a deletion, the
# timeout, memory, the launcher's records): an exit wakes the loop at once (procgroup.
# wait_for_exit), so a short job is not held up by the tick.
TICK_S = 0.05
# Where exits cannot wake the loop (no pidfd): polled more often in the first half second.
_EARLY_TICK_S = 0.005
EARLY_S = 0.5


class ReplicaSet:
    def __init__(
        self,
        launches: Sequence[ReplicaLaunch],
        policy: Policy,
        observer: Observer | None,
        deadman: DeadmanSwitch | None,
        tag: str | None,
        memory: MemoryWatch | None,
    ) -> None:
        if not launches:
            raise ValueError("a job needs at least one replica")
        self._launches = {launch.key: launch for launch in launches}
        self._policy = policy
        self._observer = observer or _NullObserver()
        self._deadman = deadman
        self.tag = tag or secrets.token_hex(8)
        self._replicas: dict[str, Replica] = {}
        self._codes: dict[str, int | None] = dict.fromkeys(self._launches)
        # Replicas the runner stopped because the job had already ended (a succeeded job's
        # remaining replicas): their 143 is the runner's doing, not a failure.
        self._stopped: set[str] = set()
        self._stop_requests = 0
        # the restarts counted against maxRestarts
        self._restarts = 0
        self._memory = memory
        # replicas this attempt killed for going over their memory limit
        self._oom: dict[str, OverLimit] = {}
        # when each replica's current attempt started (time.time(), for the recovery history)
        self._began: dict[str, float] = {}
        # the recovery history, in order
        self.history: list[Restart] = []
        # the launcher's hang restarts and torchElastic's: restarts the process outlives
        self._inplace = InPlace(launches, self.tag, policy.elastic_restarts)
        # replicas whose work was done when a deleted pod stopped them: done, whatever their exit
        self._finished: set[str] = set()

    @property
    def live_pids(self) -> dict[str, int]:
        return {k: r.pid for k, r in self._replicas.items() if self._codes[k] is None}

    def _read_in_place(self) -> None:
        for restart in self._inplace.read():
            self.history.append(restart)
            self._observer.restarted(restart)

    def _enforce_memory(self) -> None:
        if self._memory is None:
            return
        for over in self._memory.check(self.live_pids):
            replica = self._replicas[over.key]
            self._oom[over.key] = over
            procgroup.signal_group(replica.pid, over.signal)
            self._observer.out_of_memory(replica, over)

    def _succeeded(self) -> bool:
        rules = self._policy.success or (frozenset(self._launches),)
        done = {k for k, code in self._codes.items() if code == 0} | self._finished
        if done >= set(self._codes):
            return True
        return any(rule <= done for rule in rules)

    def _start_ready(self) -> None:
        """Start every replica not yet started whose upstream roles have all started, role
        after role in the operator's order: a downstream role starts as soon as the last
        replica of its upstream roles has (a local process is running once it is started; the
        order is kept, no tick is waited)."""
        while True:
            started_roles: dict[str, bool] = {}
            for key, launch in self._launches.items():
                started_roles[launch.role] = started_roles.get(launch.role, True) and (
                    key in self._replicas
                )
            ready = [
                key
                for key, launch in self._launches.items()
                if key not in self._replicas
                and all(
                    started_roles.get(role, True)
                    for role in self._policy.start_after.get(launch.role, ())
                )
            ]
            if not ready:
                return
            for key in ready:
                self._start(key, None)

    def _start(self, key: str, marker: str | None) -> None:
        attempt = self._replicas[key].attempt + 1 if key in self._replicas else 1
        replica = procgroup.start(self._launches[key], attempt, self.tag, marker)
        self._replicas[key] = replica
        self._codes[key] = None
        self._oom.pop(key, None)
        self._inplace.started(key)
        self._finished.discard(key)
        self._began[key] = time.time()
        if self._deadman is not None:
            self._deadman.watch(replica.pid)
        self._observer.started(replica)

    def _live_popens(self) -> list[subprocess.Popen[bytes]]:
        return [r.popen for k, r in self._replicas.items() if self._codes[k] is None]

    @staticmethod
    def _wait(popens: list[subprocess.Popen[bytes]], timeout: float, *, early: bool) -> None:
        """Up to `timeout`, or until one of `popens` exits."""
        procgroup.wait_for_exit(popens, timeout, poll_every=_EARLY_TICK_S if early else None)

    def _own_children(self) -> set[int]:
        own = {r.pid for r in self._replicas.values()}
        if self._deadman is not None:
            own.add(self._deadman.pid)
        return own

    def _poll(self) -> list[tuple[str, int]]:
        procgroup.reap_adopted(self._own_children())
        self._read_in_place()
        exited = []
        for key, replica in self._replicas.items():
            if self._codes[key] is not None:
                continue
            returncode = replica.popen.poll()
            if returncode is None:
                continue
            code = normalize(returncode)
            self._codes[key] = code
            if key in self._stopped:
                self._observer.stopped(replica, code)
                continue
            exited.append((key, code))
            self._observer.exited(replica, code)
        return exited

    def _settle(self) -> list[tuple[str, int]]:
        exited: list[tuple[str, int]] = []
        deadline = time.monotonic() + self._policy.settle_seconds
        while time.monotonic() < deadline and not self._stop_requests:
            exited += self._poll()
            if all(code is not None for code in self._codes.values()):
                break
            left = max(0.0, deadline - time.monotonic())
            self._wait(self._live_popens(), min(TICK_S, left), early=False)
        return exited

    def _stop(self, keys: list[str], *, ended: bool = False) -> None:
        """Stop these replicas' process groups: SIGTERM, grace period, SIGKILL; reap.
        `ended`: the job has ended; what these replicas exit with is the runner's doing."""
        replicas = [self._replicas[k] for k in keys if k in self._replicas]
        if ended:
            self._stopped.update(
                r.launch.key for r in replicas if self._codes[r.launch.key] is None
            )
        targets = [r for r in replicas if procgroup.group_alive(r.pid)]
        for replica in targets:
            procgroup.signal_group(replica.pid, signal.SIGTERM)
        requests_before = self._stop_requests
        deadline = time.monotonic() + self._policy.grace_seconds
        while targets and time.monotonic() < deadline:
            for replica in targets:
                replica.popen.poll()  # reap the leader so an emptied group reads as gone
            procgroup.reap_adopted(self._own_children())  # and what re-parented to us
            targets = [r for r in targets if procgroup.group_alive(r.pid)]
            if self._stop_requests > max(requests_before, 1):
                break  # asked again: do not wait out the grace period
            # Woken when a leader exits; members of a group whose leader is gone are looked
            # for once a tick.
            self._wait([r.popen for r in targets], TICK_S, early=False)
        for replica in targets:
            procgroup.signal_group(replica.pid, signal.SIGKILL)
        for replica in replicas:
            replica.popen.wait()
        self._poll()

    def _outcome(self, status: RunStatus, reason: str) -> Outcome:
        exits = tuple(
            ReplicaExit(launch.role, launch.index, self._codes[key], stopped=key in self._stopped)
            for key, launch in self._launches.items()
        )
        return Outcome(status, reason, tuple(sorted(exits)), self._restarts)
