"""Trials as run stacks (`trainstack sweep --env ENV`): each trial's Run file deployed through
the deploy service (its own stack, a registry record, the stack index), its job watched, its
objective read from the copy of its `$METRICS` in the platform's artifact store
(`<store>/<team>/<run>/_metrics/`, trainstack.infra.run.artifacts).

Reading oss:// or a PVC from here needs that storage mounted: the store is read as a local
directory (`--artifacts DIR`, an ossfs or PVC mount of the store's root) through
`MetricsSource`. Stopping a trial (Ctrl-C, or the pruner) destroys its stack, which deletes the
job and its pods."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from trainstack.deploy.jobstate import Outcome
from trainstack.infra.run.artifacts import METRICS_DIR

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.index import StackEntry


class MetricsSource(Protocol):
    def directory(self, run: str) -> Path | None:
        """The run's `$METRICS` as a local directory, or None while it is not there."""


class StoreDirectory:
    """The artifact store's root as a local directory (a mount of the bucket or volume)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def directory(self, run: str) -> Path | None:
        # <store>/<team>/<run>/_metrics: the team is whichever folder holds the run.
        found = sorted(self.root.glob(f"*/{run}/{METRICS_DIR}"))
        return found[0] if found else None


class JobWatcher(Protocol):
    def outcome(self, entry: StackEntry) -> Outcome: ...


class ServiceWatcher:
    """The job's state from the cluster, through the deploy service (and recorded there)."""

    def __init__(self, command: auto.PulumiCommand, home: Path | None, backend: str | None) -> None:
        self.command, self.home, self.backend = command, home, backend

    def outcome(self, entry: StackEntry) -> Outcome:
        from trainstack.deploy import service

        found = service.locate(
            entry.run,
            entry.env,
            team=entry.namespace,
            command=self.command,
            home=self.home,
            backend=self.backend,
        )
        return service.live(found).outcome


Deploy = Callable[[Path], "StackEntry"]
Destroy = Callable[["StackEntry"], None]


class ClusterLauncher:
    def __init__(
        self,
        deploy: Deploy,
        destroy: Destroy,
        watcher: JobWatcher,
        metrics: MetricsSource,
        *,
        interval: float = 10.0,
    ) -> None:
        self.deploy, self.destroy, self.watcher = deploy, destroy, watcher
        self.metrics, self.interval = metrics, interval

    def start(self, spec: Path, name: str) -> ClusterTrial:
        return ClusterTrial(self, self.deploy(spec))


class ClusterTrial:
    def __init__(self, launcher: ClusterLauncher, entry: StackEntry) -> None:
        self.launcher, self.entry = launcher, entry
        self._outcome = Outcome.PENDING
        self._checked = 0.0
        self._stopped = False

    def poll(self) -> bool:
        if self._stopped:
            return True
        now = time.monotonic()
        if now - self._checked >= self.launcher.interval:
            self._checked = now
            self._outcome = self.launcher.watcher.outcome(self.entry)
        return self._outcome.finished

    def succeeded(self) -> bool:
        return not self._stopped and self._outcome is Outcome.SUCCEEDED

    def reason(self) -> str:
        return "stopped" if self._stopped else f"job {self._outcome.value}"

    def run_id(self) -> str | None:
        return self.entry.registry_id

    def metrics(self) -> Path | None:
        return self.launcher.metrics.directory(self.entry.run)

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.launcher.destroy(self.entry)

    def wait(self, timeout: float) -> None:
        return None  # destroy returns once the job and its pods are deleted
