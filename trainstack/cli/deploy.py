"""``trainstack deploy RUN.yaml --env ENV``: the run as its own Pulumi stack, brought up to date."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("run_file", type=click.Path(path_type=Path))
@click.option("--env", "env", required=True, help="environment: the platform stack Pulumi.<ENV>")
@click.option("--backend", default=None, metavar="URL",
              help="Pulumi backend for run stacks (default $TRAINSTACK_BACKEND_URL, "
                   "else file://.trainstack/pulumi)")
@click.option("--quiet", is_flag=True, help="do not stream the Pulumi CLI's progress")
def deploy(run_file: Path, env: str, backend: str | None, quiet: bool) -> None:
    """Deploy RUN_FILE to ENV as one stack (create it, or update it)."""
    from trainstack.deploy.service import deploy as deploy_run

    def progress(line: str) -> None:
        click.echo(line, err=True)

    entry = deploy_run(run_file, env, backend=backend, on_output=None if quiet else progress)
    click.echo(f"deployed {entry.run} to {entry.env}: stack {entry.stack} in {entry.backend}")
    for key in ("kind", "jobName", "namespace"):
        if key in entry.outputs:
            click.echo(f"  {key}: {entry.outputs[key]}")
    click.echo(f"next: trainstack status {entry.run}  |  trainstack destroy {entry.run}")
