"""``trainstack wait RUN``: block until a deployed run's job ends; exit with its outcome."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import (
    Seconds,
    backend_option,
    env_option,
    home_option,
    store_option,
    team_option,
)


@click.command()
@click.argument("run")
@env_option
@team_option
@click.option(
    "--timeout",
    type=Seconds(min=0),
    default=None,
    metavar="SECONDS",
    help="give up after this long (exit 124); default: wait as long as it takes",
)
@click.option(
    "--interval",
    type=Seconds(min=0.1, finite=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="how often to ask the cluster",
)
@store_option
@home_option
@backend_option
def wait(
    run: str,
    env: str | None,
    team: str | None,
    timeout: float | None,
    interval: float,
    store: Path | None,
    home: Path | None,
    backend: str | None,
) -> None:
    """Wait for a deployed RUN: exit 0 if its job succeeded, 1 if it failed, 124 on timeout."""
    from trainstack.deploy import podrecords, service
    from trainstack.deploy.jobstate import JobState, Outcome
    from trainstack.deploy.watch import JobFailedError

    def keep(state: JobState, *, progress_only: bool = False) -> None:
        # at each change: a pod replaced between two changes is still seen once; between them,
        # each step the store shows, so the goodput ledger's marks are as dense as the polls
        problem = podrecords.keep(found.entry, state, store, progress_only=progress_only)
        if problem is not None:
            click.echo(f"warning: {problem}", err=True)

    def show(state: JobState) -> None:
        keep(state)
        replicas = ", ".join(f"{r.role}-{r.index} {r.phase}" for r in state.replicas)
        click.echo(
            f"{state.name}: {state.outcome}"
            + (f" [{replicas}]" if replicas else "")
            + (f" waiting: {'; '.join(state.waiting)}" if state.waiting else ""),
            err=True,
        )

    found = service.locate(run, env, team=team, home=home, backend=backend)
    state = service.wait(
        found,
        timeout=timeout,
        interval=interval,
        on_change=show,
        on_poll=lambda s: keep(s, progress_only=True),
    )
    keep(state)
    if state.outcome is Outcome.FAILED:
        exits = ", ".join(
            f"{r.role}-{r.index} exit {r.exit_code}"
            for r in state.replicas
            if r.exit_code not in (None, 0)
        )
        raise JobFailedError(
            f"run {run!r}: job {state.namespace}/{state.name} failed"
            + (f": {state.message}" if state.message else "")
            + (f" ({exits})" if exits else ""),
            hint=f"trainstack logs {run}",
        )
    click.echo(f"{run}: job {state.namespace}/{state.name} succeeded")
