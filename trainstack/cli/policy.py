"""``trainstack policy check [RUN...] --env ENV``: the policy rules, offline, without Pulumi."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import (
    environment,
    output_format,
    project_option,
    store_option,
    stores_at,
)
from trainstack.errors import UserError


@click.group()
def policy() -> None:
    """Policy rules (docs/policies.md): the offline check and the CrossGuard pack's context."""


@policy.command()
@click.argument("runs", nargs=-1, type=click.Path(path_type=Path))
@environment("environment: Pulumi.<ENV>.yaml", required=True)
@output_format("text", "json", "github", help="github prints workflow commands (annotations).")
@project_option
@store_option
def check(
    runs: tuple[Path, ...], env: str, fmt: str, project: Path | None, store: Path | None
) -> None:
    """Check RUN files (or, with none, the platform) against ENV's rules.

    Exit 0 when no mandatory rule fires (advisory ones are printed), 1 when one does, 2 when a
    RUN file could not be checked; each file is checked whatever the one before it did.
    """
    from trainstack.policy.check import check_platform, check_run
    from trainstack.policy.report import as_json, github, github_error, text

    stores = stores_at(store)
    if not runs:
        reports = [check_platform(env, project)]
        failed: list[tuple[Path, UserError]] = []
    elif len(runs) == 1:
        reports, failed = [check_run(runs[0], env, project, stores)], []  # as any verb's error
    else:
        reports, failed = [], []
        for run in runs:
            try:
                reports.append(check_run(run, env, project, stores))
            except UserError as err:
                failed.append((run, err))
    out = {"text": text, "json": as_json, "github": github}[fmt](reports)
    if out:
        click.echo(out)
    for run, problem in failed:
        if fmt == "github":
            click.echo(github_error(str(run), problem.render()))
        click.echo(f"error: {run}: {problem.render()}", err=True)
    if failed:
        raise click.exceptions.Exit(max(err.exit_code for _, err in failed))
    if any(r.mandatory for r in reports):
        raise click.exceptions.Exit(1)


@policy.command()
@environment("environment: Pulumi.<ENV>.yaml", required=True)
@project_option
@store_option
def context(env: str, project: Path | None, store: Path | None) -> None:
    """Print ENV's policy context as JSON: what the CrossGuard pack reads from
    $TRAINSTACK_POLICY_CONTEXT (the platform's outputs, planned offline, and the teams)."""
    from trainstack.envfile import find_project
    from trainstack.plan.service import platform_outputs
    from trainstack.policy.check import context_for

    outputs, _ = platform_outputs(find_project(project), env)
    ctx, _ = context_for(env, outputs, project, stores=stores_at(store))
    click.echo(ctx.to_json())
