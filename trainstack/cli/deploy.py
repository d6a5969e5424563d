"""``trainstack deploy RUN.yaml --env ENV``: the run as its own Pulumi stack, brought up to date."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import (
    backend_option,
    environment,
    home_option,
    param_option,
    project_option,
)


@click.command()
@click.argument("run_file", type=click.Path(path_type=Path))
@environment("environment: the platform stack Pulumi.<ENV>", required=True)
@click.option(
    "--rerun",
    is_flag=True,
    help="submit the job again even if nothing changed (a changed run always is)",
)
@click.option(
    "--upgrade",
    is_flag=True,
    help="deploy what this trainstack renders for the run even if the run itself is unchanged "
    "(its metadata, or trainstack's rendering, changed): restarts its job",
)
@click.option("--quiet", is_flag=True, help="do not stream the Pulumi CLI's progress")
@param_option
@home_option
@backend_option
@project_option
def deploy(
    run_file: Path,
    env: str,
    rerun: bool,
    upgrade: bool,
    quiet: bool,
    params: tuple[str, ...],
    home: Path | None,
    backend: str | None,
    project: Path | None,
) -> None:
    """Deploy RUN_FILE to ENV as one stack (create it, or update it: refresh, then up)."""
    from trainstack.deploy.service import deploy as deploy_run
    from trainstack.spec import overrides

    def progress(line: str) -> None:
        click.echo(line, err=True)

    entry = deploy_run(
        run_file,
        env,
        home=home,
        backend=backend,
        rerun=rerun,
        upgrade=upgrade,
        on_output=None if quiet else progress,
        on_notice=progress,  # --quiet too: CI's summary is where a run's deploy is read
        project=project,
        params=overrides.parse(params),
    )
    click.echo(f"deployed {entry.run} to {entry.env}: stack {entry.stack} in {entry.backend}")
    for key in ("kind", "jobName", "namespace", "specHash"):
        if key in entry.outputs:
            click.echo(f"  {key}: {entry.outputs[key]}")
    click.echo(
        f"next: trainstack status {entry.run}  |  trainstack wait {entry.run}  |  "
        f"trainstack logs {entry.run} -f  |  trainstack destroy {entry.run}"
    )
