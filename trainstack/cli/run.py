"""`trainstack run RUN.yaml --local`: run every replica of a run on this machine."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trainstack.cli.options import (
    Seconds,
    environment,
    home_option,
    param_option,
    project_option,
)
from trainstack.errors import RunFailedError, UserError
from trainstack.spec.overrides import Overrides

if TYPE_CHECKING:
    from trainstack.trainer import Operator


@click.command()
@click.argument("spec", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Run here, every role and replica as a process, with the in-container contract.",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=PATH",
    help="Bind input channel NAME to a local file or directory (repeatable).",
)
@click.option(
    "--output",
    "outputs",
    multiple=True,
    metavar="NAME=PATH",
    help="Commit output channel NAME to a local directory when the run ends.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="NAME=PATH",
    help="Bind model NAME (spec.models) to a local file or directory (repeatable).",
)
@click.option(
    "--resume",
    metavar="RUN",
    help="Seed preloaded outputs (checkpoints) from an earlier local run.",
)
@click.option(
    "--preempt",
    "preempt",
    multiple=True,
    metavar="ROLE-INDEX@SECONDS",
    help="A preemption drill: delete that replica's pod SECONDS after the start, as a "
    "preemption or drain would; it is recreated under faultTolerance (ExitCode), counted, "
    "and fails the run otherwise, as on Kubernetes 1.27+ (repeatable).",
)
@click.option(
    "--pass-env",
    "pass_env",
    multiple=True,
    metavar="NAME",
    help="Also give every replica this variable of your shell (repeatable); a pod gets none of "
    "your shell's, so a local replica gets only where this machine's programs and libraries "
    "are, unless named here.",
)
@click.option(
    "--no-install",
    is_flag=True,
    help="Do not install the code's requirements.txt; use what is installed.",
)
@click.option(
    "--sandbox",
    type=click.Choice(["auto", "namespaces", "processes"]),
    default=None,  # trainstack.local.sandboxmode.DEFAULT
    help="namespaces: each replica a host of its own, as a pod (its address, hostname, the "
    "cluster's names and ports, PID 1, a way out through this machine); processes: replicas "
    "share this machine's network (127.0.0.1, free ports); auto: namespaces where this machine "
    "allows them, else processes. Default: auto; the run says which it got.",
)
@environment(
    "Follow this environment's operator (trainstack:operator in Pulumi.<ENV>.yaml): on "
    "trainer, the replicas are the TrainJob's nodes and a failure restarts them all, as JobSet "
    "does. Default: KubeDL's semantics."
)
@param_option
@project_option
@home_option
@click.option(
    "--grace",
    # finite, as `wait` takes it: an infinite grace period never ends a stopped replica
    type=Seconds(min=0, finite=True),
    default=10.0,
    show_default=True,
    help="Seconds a replica gets between SIGTERM and SIGKILL when stopped.",
)
def run(
    spec: Path,
    local: bool,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    models: tuple[str, ...],
    resume: str | None,
    preempt: tuple[str, ...],
    pass_env: tuple[str, ...],
    no_install: bool,
    sandbox: str | None,
    env: str | None,
    params: tuple[str, ...],
    project: Path | None,
    home: Path | None,
    grace: float,
) -> None:
    """Run a run spec. With --local, on this machine; Ctrl-C stops every replica."""
    if not local:
        raise UserError(
            "`trainstack run` runs on this machine only with --local",
            hint=f"on this machine: trainstack run {spec} --local; on a cluster: "
            f"trainstack deploy {spec} --env ENV",
        )
    from trainstack.local import drills
    from trainstack.local.bindings import parse_overrides
    from trainstack.local.procgroup import become_subreaper
    from trainstack.local.report import summary
    from trainstack.local.runner import LocalRunRequest, run_local
    from trainstack.local.sandboxmode import SandboxMode
    from trainstack.registry import RunStatus, state_home
    from trainstack.spec import overrides

    values = overrides.parse(params)
    operator = _operator(spec, env, project, values)
    # This process's children are all the run's: strays that leave a replica's group and clear
    # its tag re-parent here, and the final sweep finds them (docs/local.md).
    become_subreaper()
    result = run_local(
        LocalRunRequest(
            spec=spec,
            home=state_home(home),
            inputs=parse_overrides(inputs, "--input"),
            outputs=parse_overrides(outputs, "--output"),
            models=parse_overrides(models, "--model"),
            resume=resume,
            install=not no_install,
            grace_seconds=grace,
            preempt=drills.parse(preempt),
            pass_env=pass_env,
            sandbox=None if sandbox is None else SandboxMode(sandbox),
            operator=operator,
            params=values,
        )
    )
    with contextlib.suppress(BrokenPipeError):  # `… | head` left early; the run is recorded
        click.echo(summary(result))
    status = result.record.status
    if status is RunStatus.CANCELLED:
        raise click.exceptions.Exit(130)
    if status is not RunStatus.SUCCEEDED:
        raise RunFailedError(
            f"run {result.record.id} {status}: {result.record.reason or 'no reason recorded'}",
            hint=f"trainstack logs {result.record.id} --tail 50",
        )


def _operator(spec: Path, env: str | None, project: Path | None, params: Overrides) -> Operator:
    """Whose semantics the run follows: KubeDL's without --env; else the environment's
    operator, read as plan reads it. A run the operator cannot run, or whose TrainJob cannot be
    rendered, is refused as plan and `render --env` refuse it; a `custom` run is the same batch
    Job on either operator, so it keeps the one model of it."""
    from trainstack.trainer import RUNTIMES, Operator, check_runs, runs

    if env is None:
        return Operator.KUBEDL
    from trainstack.envfile import find_project
    from trainstack.plan.service import environment_operator, environments_of
    from trainstack.render.trainjob import check_renders
    from trainstack.spec import load_run

    where = find_project(project)
    operator = environment_operator(where, env)
    if operator is Operator.KUBEDL:
        return operator
    run = load_run(spec, params=params)
    if not runs(operator, run.job_type):
        check_runs(operator, run.job_type, env, environments_of(where, Operator.KUBEDL))
    if run.job_type not in RUNTIMES:
        return Operator.KUBEDL
    check_renders(run)
    return operator
