"""`trainstack sweep`: load the spec, pick the launcher, run the loop, write the summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.errors import UserError
from trainstack.spec.loader import load_sweep
from trainstack.spec.overrides import NONE, Overrides
from trainstack.spec.sweepmodel import Sweep
from trainstack.sweep.engine import Launcher, run_sweep
from trainstack.sweep.summary import HISTORY_PNG, best, draw_history, summary
from trainstack.sweep.view import TrialRow, View

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.sweep.cluster import JobWatcher


@dataclass(frozen=True)
class Finished:
    sweep: Sweep
    directory: Path
    text: str
    png: Path | None
    best: TrialRow | None


def run(
    spec: Path,
    home: Path,
    *,
    local: bool,
    env: str | None,
    parallel: int | None = None,
    artifacts: Path | None = None,
    install: bool = True,
    grace: float = 10.0,
    backend: str | None = None,
    command: auto.PulumiCommand | None = None,
    watcher: JobWatcher | None = None,
    watch_interval: float = 10.0,
    view: View | None = None,
    params: Overrides = NONE,
) -> Finished:
    """`params`: `-p NAME=VALUE`, fixed for every trial. `command` and `watcher` stand in for
    the Pulumi CLI and the cluster in tests."""
    sweep = load_sweep(spec, params=params)
    launcher = (
        _local(sweep, home, install, grace)
        if local
        else _cluster(env, home, artifacts, backend, command, watcher, watch_interval)
    )
    result = run_sweep(sweep, home, launcher, view or View(), parallel=parallel)
    rows = list(result.rows)
    goal, metric = sweep.objective.goal, sweep.objective.metric
    png = draw_history(rows, goal, metric, result.directory / HISTORY_PNG)
    return Finished(
        sweep, result.directory, summary(sweep.name, rows, goal, metric, png), png, best(rows, goal)
    )


def _local(sweep: Sweep, home: Path, install: bool, grace: float) -> Launcher:
    from trainstack.sweep.local import LocalLauncher
    from trainstack.sweep.study import sweep_logs

    return LocalLauncher(home, sweep_logs(home, sweep.name), grace_seconds=grace, install=install)


def _cluster(
    env: str | None,
    home: Path,
    artifacts: Path | None,
    backend: str | None,
    command: auto.PulumiCommand | None,
    watcher: JobWatcher | None,
    interval: float,
) -> Launcher:
    from trainstack.deploy import service
    from trainstack.deploy.index import StackEntry
    from trainstack.deploy.workspace import find_pulumi
    from trainstack.sweep.cluster import ClusterLauncher, ServiceWatcher, StoreDirectory

    assert env is not None
    if artifacts is None:
        raise UserError(
            "--env needs --artifacts DIR: the artifact store's root as a local "
            "directory, where each trial's metrics are read",
            hint="mount the platform's artifactStore (ossfs for oss://, the volume "
            "for pvc://) and pass its root",
        )
    cli = command or find_pulumi()

    def deploy(spec: Path) -> StackEntry:
        return service.deploy(
            spec, env, command=cli, home=home, backend=backend, look_for_moved=False
        )

    def destroy(entry: StackEntry) -> None:
        service.destroy(entry.run, entry.env, command=cli, home=home, backend=backend)

    return ClusterLauncher(
        deploy,
        destroy,
        watcher or ServiceWatcher(cli, home, backend),
        StoreDirectory(artifacts),
        interval=interval,
    )
