"""`trainstack sweep SWEEP.yaml --local | --env ENV`: a hyperparameter search (docs/sweeps.md)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from trainstack.cli.options import (
    Seconds,
    backend_option,
    environment,
    home_option,
    param_option,
)
from trainstack.errors import RunFailedError, UserError


@click.command()
@click.argument("spec", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--local", "local", is_flag=True, help="Run each trial here as a local run.")
@environment("Deploy each trial as a run stack in this environment.")
@click.option(
    "--parallel",
    type=click.IntRange(min=1, max=64),
    default=None,
    help="Trials at once (default: the spec's budget.parallel).",
)
@click.option(
    "--artifacts",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="With --env: the artifact store's root as a local directory (an ossfs or "
    "PVC mount), where each trial's metrics are read.",
)
@click.option(
    "--no-install", is_flag=True, help="Local trials: do not install the code's requirements.txt."
)
@click.option(
    "--grace",
    type=Seconds(min=0, finite=True),
    default=10.0,
    show_default=True,
    help="Seconds a replica gets between SIGTERM and SIGKILL when a trial stops.",
)
@param_option
@home_option
@backend_option
def sweep(
    spec: Path,
    local: bool,
    env: str | None,
    parallel: int | None,
    artifacts: Path | None,
    no_install: bool,
    grace: float,
    params: tuple[str, ...],
    home: Path | None,
    backend: str | None,
) -> None:
    """Search hyperparameters: every trial an ordinary run. Ctrl-C stops every trial; the same
    command again resumes the sweep."""
    if local == (env is not None):
        raise UserError("give either --local or --env ENV", hint=f"trainstack sweep {spec} --local")
    from trainstack.registry import state_home
    from trainstack.spec import overrides
    from trainstack.sweep import service

    values = overrides.parse(params)
    result = service.run(
        spec,
        state_home(home),
        local=local,
        env=env,
        parallel=parallel,
        artifacts=artifacts,
        install=not no_install,
        grace=grace,
        backend=backend,
        params=values,
    )
    with contextlib.suppress(BrokenPipeError):
        click.echo(result.text)
    if result.best is None:
        raise RunFailedError(
            f"sweep {result.sweep.name}: no trial completed with an objective value",
            hint=f"trainstack sweeps show {result.sweep.name}",
        )
