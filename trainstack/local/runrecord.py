"""What a local run's runner keeps recording while the run goes: the supervisor's events into
the live view, the usage sampler and the registry (`Observer`), and a reserve of disk space
given back when the disk fills, so that the run's end can still be recorded (`Reserve`)."""

from __future__ import annotations

import os
from pathlib import Path

from trainstack.local import logcap
from trainstack.local.console import LiveView
from trainstack.local.memlimit import OverLimit
from trainstack.local.procgroup import Replica
from trainstack.local.usage import Sampler
from trainstack.registry import Registry, RegistryError, ReplicaExit, Restart

# Space kept aside in the run directory while a run goes on, given back when the disk fills up
# so that the end of the run can still be recorded (a few SQLite pages).
RESERVE_BYTES = 1 << 20


class Reserve:
    """A file of `RESERVE_BYTES` in the run directory, taken at the start of supervision and
    given back (deleted) when the disk fills up, so that the run's end can still be recorded."""

    NAME = ".trainstack-reserve"

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / self.NAME

    def take(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            finally:
                os.close(fd)
        except OSError:
            self.release()  # the disk is already too full for it: the run finds out soon

    def release(self) -> bool:
        try:
            self.path.unlink()
        except OSError:
            return False
        return True


class Observer:
    """Supervisor events → the live view, the usage sampler and the registry."""

    def __init__(
        self,
        reg: Registry,
        run_id: str,
        view: LiveView,
        sampler: Sampler,
        replicas: list[tuple[str, int]],
        max_restarts: int,
        reserve: Reserve,
    ) -> None:
        self._reg, self._run_id, self._view, self._sampler = reg, run_id, view, sampler
        # Keyed by (role, index), as the registry records them; "role-index" is display only.
        self._codes: dict[tuple[str, int], int | None] = dict.fromkeys(replicas)
        self._stopped: set[tuple[str, int]] = set()
        self._restarts = 0
        self._max_restarts = max_restarts
        self._reserve = reserve
        self.disk_full = False  # a progress record failed for want of space
        self._unrecorded = False

    def started(self, replica: Replica) -> None:
        key = replica.launch.key
        self._codes[_replica(replica)] = None
        self._stopped.discard(_replica(replica))  # a whole-set restart starts it again
        self._sampler.track(key, replica.pid)
        self._view.replica(key, state="running", pid=replica.pid, attempt=replica.attempt)

    def exited(self, replica: Replica, exit_code: int) -> None:
        key = replica.launch.key
        self._codes[_replica(replica)] = exit_code
        self._sampler.untrack(key)
        self._view.replica(key, state=f"exited {exit_code}")
        if exit_code != 0:
            self._view.event(f"{key} exited with code {exit_code}")
        self._save()

    def stopped(self, replica: Replica, exit_code: int) -> None:
        """Stopped by the runner once the job had ended: shown as such, not as a failure."""
        key = replica.launch.key
        self._codes[_replica(replica)] = exit_code
        self._stopped.add(_replica(replica))
        self._sampler.untrack(key)
        self._view.replica(key, state="stopped")
        self._save()

    def out_of_memory(self, replica: Replica, over: OverLimit) -> None:
        self._view.event(f"{over.key} {over.describe()}")

    def restarting(self, restarts: int, reason: str) -> None:
        self._view.event(f"restart {restarts} of {self._max_restarts}: {reason}")

    def missed(self, text: str) -> None:
        """A pod deletion (a preemption drill) that found nothing left to stop."""
        self._view.event(text)

    def restarted(self, restart: Restart) -> None:
        """One restart for the recovery history, whether or not it counts against maxRestarts."""
        self._restarts += 1
        if not restart.counted:
            self._view.event(f"{restart.key} restarted ({restart.reason}): {restart.detail}")
        try:
            self._reg.record_restart(self._run_id, restart)
        except RegistryError as err:
            self._failed_to_record(err)
        self._save()

    def _save(self) -> None:
        exits = [
            ReplicaExit(role, index, c, stopped=(role, index) in self._stopped)
            for (role, index), c in self._codes.items()
        ]
        try:
            self._reg.record_progress(self._run_id, exits=exits, restarts=self._restarts)
        except RegistryError as err:
            self._failed_to_record(err)

    def _failed_to_record(self, err: RegistryError) -> None:
        # Progress is worth less than the run: the end is recorded (with the reserve's space,
        # given back now) and says what happened.
        if not self._unrecorded:
            self._view.event(f"could not record progress: {err.message}")
        self._unrecorded = True
        if logcap.disk_full(err):
            self.disk_full = True
            self._reserve.release()


def _replica(replica: Replica) -> tuple[str, int]:
    return replica.launch.role, replica.launch.index
