"""Run a job's replicas to an outcome with KubeDL's semantics.

- A replica that exits 0 is done; the job succeeds when every replica outside the service roles
  (TF parameter servers, which never exit on their own) is done; service replicas are then stopped.
- A non-zero exit fails the job, unless it is one of ExitCode's transient codes (or the run asks
  for unconditional restarts) and restarts remain: then the whole job restarts (distributed kinds,
  whose collectives need every rank) or only that replica (independent workers).
- The timeout, like activeDeadlineSeconds, counts from the first start across restarts.
- A stop request (SIGINT/SIGTERM to the runner) stops every replica: SIGTERM to each process
  group, SIGKILL after the grace period (at once on a second request), then a sweep for strays.
"""

from __future__ import annotations

import enum
import secrets
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from trainstack.local import procgroup
from trainstack.local.deadman import DeadmanSwitch
from trainstack.local.exitcodes import describe, is_retryable, normalize
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.procgroup import Replica
from trainstack.registry.model import ReplicaExit, RunStatus

_TICK_S = 0.05
# Polled more often in the first half second, so a short job is not held up by the tick.
_EARLY_TICK_S = 0.005
_EARLY_S = 0.5


class RestartScope(enum.StrEnum):
    JOB = "job"
    REPLICA = "replica"


@dataclass(frozen=True)
class Policy:
    max_restarts: int = 0
    scope: RestartScope = RestartScope.JOB
    unconditional: bool = False
    timeout_seconds: float | None = None
    grace_seconds: float = 10.0
    # After a first failure, how long to wait for other replicas to fail on their own, so that a
    # peer's "connection reset" exit does not hide the SIGKILL that caused it.
    settle_seconds: float = 1.0
    service_roles: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Outcome:
    status: RunStatus
    reason: str
    exits: tuple[ReplicaExit, ...]
    restarts: int


class Observer(Protocol):
    def started(self, replica: Replica) -> None: ...

    def exited(self, replica: Replica, exit_code: int) -> None: ...

    def restarting(self, restarts: int, reason: str) -> None: ...


class _NullObserver:
    def started(self, replica: Replica) -> None:
        pass

    def exited(self, replica: Replica, exit_code: int) -> None:
        pass

    def restarting(self, restarts: int, reason: str) -> None:
        pass


class Supervisor:
    def __init__(
        self,
        launches: Sequence[ReplicaLaunch],
        policy: Policy,
        observer: Observer | None = None,
        deadman: DeadmanSwitch | None = None,
        tag: str | None = None,
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
        self._restarts = 0
        self._stop_requests = 0

    def request_stop(self) -> None:
        """Safe to call from a signal handler: it only counts; the loop acts within a tick."""
        self._stop_requests += 1

    @property
    def live_pids(self) -> dict[str, int]:
        return {k: r.pid for k, r in self._replicas.items() if self._codes[k] is None}

    def run(self) -> Outcome:
        if self._deadman is not None:
            self._deadman.wait_ready()
        started = time.monotonic()
        try:
            for key in self._launches:
                self._start(key, None)
            return self._loop(started)
        finally:
            self._stop(list(self._replicas))
            procgroup.kill_tagged(self.tag)
            if self._deadman is not None:
                self._deadman.disarm()

    # --- the loop ----------------------------------------------------------------------------

    def _loop(self, started: float) -> Outcome:
        policy = self._policy
        while True:
            if self._stop_requests:
                self._stop(list(self._replicas))
                return self._outcome(RunStatus.CANCELLED, "stopped by a signal to the runner")
            if policy.timeout_seconds and time.monotonic() - started > policy.timeout_seconds:
                self._stop(list(self._replicas))
                return self._outcome(
                    RunStatus.FAILED, f"timed out after {policy.timeout_seconds:g}s"
                )
            failures = [(k, c) for k, c in self._poll() if c != 0]
            if failures:
                failures += [(k, c) for k, c in self._settle() if c != 0]
                ended = self._handle_failures(failures)
                if ended is not None:
                    return ended
                continue
            if self._succeeded():
                self._stop(list(self._replicas))
                return self._outcome(RunStatus.SUCCEEDED, "")
            early = time.monotonic() - started < _EARLY_S
            time.sleep(_EARLY_TICK_S if early else _TICK_S)

    def _handle_failures(self, failures: list[tuple[str, int]]) -> Outcome | None:
        policy = self._policy
        told = "; ".join(f"{k} exited with {describe(c)}" for k, c in failures)
        retryable = [k for k, c in failures if is_retryable(c, unconditional=policy.unconditional)]
        if policy.scope is RestartScope.JOB:
            # The whole job restarts when any failure is transient: the others are most likely
            # peers that lost it.
            wanted = 1 if retryable else 0
        else:
            wanted = len(retryable) if len(retryable) == len(failures) else 0
        if wanted == 0:
            self._stop(list(self._replicas))
            return self._outcome(RunStatus.FAILED, f"{told} (not retried)")
        if self._restarts + wanted > policy.max_restarts:
            self._stop(list(self._replicas))
            return self._outcome(
                RunStatus.FAILED,
                f"{told}; no restarts left (maxRestarts: {policy.max_restarts})",
            )
        self._restarts += wanted
        self._observer.restarting(self._restarts, told)
        marker = (
            f"restart {self._restarts} of {policy.max_restarts} after: {told}"
        )
        keys = list(self._launches) if policy.scope is RestartScope.JOB else retryable
        self._stop(keys)
        for key in keys:
            self._start(key, marker)
        return None

    def _succeeded(self) -> bool:
        service = self._policy.service_roles
        deciding = [k for k, launch in self._launches.items() if launch.role not in service]
        if not deciding:
            deciding = list(self._launches)
        return all(self._codes[k] == 0 for k in deciding)

    # --- processes ---------------------------------------------------------------------------

    def _start(self, key: str, marker: str | None) -> None:
        attempt = self._replicas[key].attempt + 1 if key in self._replicas else 1
        replica = procgroup.start(self._launches[key], attempt, self.tag, marker)
        self._replicas[key] = replica
        self._codes[key] = None
        if self._deadman is not None:
            self._deadman.watch(replica.pid)
        self._observer.started(replica)

    def _poll(self) -> list[tuple[str, int]]:
        exited = []
        for key, replica in self._replicas.items():
            if self._codes[key] is not None:
                continue
            returncode = replica.popen.poll()
            if returncode is None:
                continue
            code = normalize(returncode)
            self._codes[key] = code
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
            time.sleep(_TICK_S)
        return exited

    def _stop(self, keys: list[str]) -> None:
        """Stop these replicas' process groups: SIGTERM, grace period, SIGKILL; reap."""
        replicas = [self._replicas[k] for k in keys if k in self._replicas]
        targets = [r for r in replicas if procgroup.group_alive(r.pid)]
        for replica in targets:
            procgroup.signal_group(replica.pid, signal.SIGTERM)
        requests_before = self._stop_requests
        deadline = time.monotonic() + self._policy.grace_seconds
        while targets and time.monotonic() < deadline:
            for replica in targets:
                replica.popen.poll()  # reap the leader so an emptied group reads as gone
            targets = [r for r in targets if procgroup.group_alive(r.pid)]
            if self._stop_requests > max(requests_before, 1):
                break  # asked again: do not wait out the grace period
            time.sleep(_TICK_S)
        for replica in targets:
            procgroup.signal_group(replica.pid, signal.SIGKILL)
        for replica in replicas:
            replica.popen.wait()
        self._poll()

    def _outcome(self, status: RunStatus, reason: str) -> Outcome:
        exits = tuple(
            ReplicaExit(launch.role, launch.index, self._codes[key])
            for key, launch in self._launches.items()
        )
        return Outcome(status, reason, tuple(sorted(exits)), self._restarts)
