"""``trainstack destroy RUN``: delete what the run's stack created, then the stack itself."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import backend_option, env_option, home_option, team_option


@click.command()
@click.argument("run")
@env_option
@team_option
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.option("--quiet", is_flag=True, help="do not stream the Pulumi CLI's progress")
@home_option
@backend_option
def destroy(
    run: str,
    env: str | None,
    team: str | None,
    yes: bool,
    quiet: bool,
    home: Path | None,
    backend: str | None,
) -> None:
    """Destroy the stack of a deployed RUN and remove it (also one a teammate deployed)."""
    from trainstack.deploy.service import destroy as destroy_run
    from trainstack.deploy.workspace import find_pulumi

    # Prerequisites before the question: without the CLI there is nothing to confirm. With
    # --yes there is no question, and the run is looked up first (a damaged index says so).
    command = None if yes else find_pulumi()
    if not yes:
        click.confirm(f"destroy the job of run {run!r} and remove its stack?", abort=True)

    def progress(line: str) -> None:
        click.echo(line, err=True)

    entry = destroy_run(
        run,
        env,
        team=team,
        command=command,
        home=home,
        backend=backend,
        on_output=None if quiet else progress,
    )
    click.echo(f"destroyed {entry.run}: stack {entry.stack} removed from {entry.backend}")
