"""``trainstack destroy RUN``: delete what the run's stack created, then the stack itself."""

from __future__ import annotations

import click


@click.command()
@click.argument("run")
@click.option("--env", "env", default=None, help="when the run is deployed in several")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.option("--quiet", is_flag=True, help="do not stream the Pulumi CLI's progress")
def destroy(run: str, env: str | None, yes: bool, quiet: bool) -> None:
    """Destroy the stack of a deployed RUN and remove it."""
    from trainstack.deploy.service import destroy as destroy_run

    if not yes:
        click.confirm(f"destroy the job of run {run!r} and remove its stack?", abort=True)

    def progress(line: str) -> None:
        click.echo(line, err=True)

    entry = destroy_run(run, env, on_output=None if quiet else progress)
    click.echo(f"destroyed {entry.run}: stack {entry.stack} removed from {entry.backend}")
