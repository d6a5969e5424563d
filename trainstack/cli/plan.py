"""``trainstack plan``: what ``pulumi up`` would create, offline, without cloud credentials."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from trainstack.cli.options import (
    environment,
    output_format,
    param_option,
    project_option,
    store_option,
    stores_at,
)
from trainstack.errors import UserError
from trainstack.spec.overrides import Overrides

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan


@click.command()
@click.argument("run_files", nargs=-1, type=click.Path(path_type=Path))
@environment("environment: Pulumi.<ENV>.yaml", required=True)
@output_format(
    "text",
    "json",
    "github",
    help="json: the plan as data (a list of {file, plan} for several files); github: Markdown "
    "for a workflow's step summary, a section per file",
    json_alias=True,
)
@param_option
@project_option
@store_option
def plan(
    run_files: tuple[Path, ...],
    env: str,
    fmt: str,
    params: tuple[str, ...],
    project: Path | None,
    store: Path | None,
) -> None:
    """Plan the platform (no RUN_FILE) or each RUN_FILE's stack, offline under mocks. A Sweep
    file plans the run stacks of the sweep's first batch of trials.

    Several files are planned in one process (the platform once, not once per file), each
    whatever the one before it did; the exit status is 2 when one could not be planned."""
    from trainstack.spec import overrides

    values = overrides.parse(params)
    if values and len(run_files) != 1:
        raise UserError(
            "-p sets a parameter of one run (or of every trial of one sweep): give one file",
            hint="plan each run file with its own -p",
        )
    if len(run_files) <= 1 and fmt != "github":
        _plan_one(run_files[0] if run_files else None, env, fmt, project, sys.stdout, store, values)
        return
    code = 0
    documents: list[dict[str, object]] = []
    for path in run_files or (None,):
        target = str(path or "platform")
        out = io.StringIO()
        try:
            _plan_one(path, env, fmt if fmt == "json" else "text", project, out, store)
        except UserError as err:
            code = max(code, err.exit_code)  # the worst, as a lone file would exit with it
            _report(target, fmt, documents, error=err.render())
        else:
            _report(target, fmt, documents, text=out.getvalue())
    if fmt == "json":
        click.echo(json.dumps(documents, indent=2))
    if code:
        raise click.exceptions.Exit(code)


def _report(
    target: str, fmt: str, documents: list[dict[str, object]], *, text: str = "", error: str = ""
) -> None:
    """One file's plan (`text`) or why it has none (`error`), in the chosen format; errors go
    to stderr except in the step summary, where the reviewer reads them in place."""
    from trainstack.plan.report import markdown_section

    if fmt == "json":
        documents.append(
            {"file": target, **({"error": error} if error else {"plan": json.loads(text)})}
        )
    elif fmt == "github":
        click.echo(markdown_section(target, f"error: {error}\n" if error else text), nl=False)
    else:
        click.echo(f"{target}:" + ("" if error else f"\n{text}"))
    if error and fmt != "github":
        click.echo(f"error: {error}", err=True)


def _plan_one(
    path: Path | None,
    env: str,
    fmt: str,
    project: Path | None,
    out: TextIO,
    store: Path | None,
    params: Overrides | None = None,
) -> None:
    from rich.console import Console

    from trainstack.envfile import find_project
    from trainstack.plan import service
    from trainstack.plan.report import console_width, plan_json, print_plan
    from trainstack.policy.check import check_plan
    from trainstack.policy.report import text

    if path is not None and _is_sweep(path):
        _plan_sweep(path, env, fmt == "json", project, out, params)
        return
    if path is None:
        result, kind = service.plan_platform(env, project), "platform"
        outputs = result.outputs
    else:
        result, kind = service.plan_run(path, env, project, params=params), "run"
        outputs = service.platform_outputs(find_project(project), env)[0]
    if fmt == "json":
        # one document for machines; `trainstack policy check --format json` has the violations
        click.echo(plan_json(result, kind=kind, env=env), file=out)
        return
    # Piped or captured output gets a wide table rather than rich's 80-column default.
    width = console_width(out.isatty())
    print_plan(result, Console(file=out, width=width), kind=kind, env=env)
    stores = stores_at(store)
    report = check_plan(result, env, str(path or "platform"), outputs, project, stores)
    click.echo("policy: " + text([report]), file=out)
    if kind == "run":
        from trainstack.policy.check import budget_lines

        for line in budget_lines(result, env, outputs, project, stores):
            click.echo(line, file=out)
        _deployed_line(result, env, out)


def _deployed_line(result: Plan, env: str, out: TextIO) -> None:
    """What deploy would do to the run as this user deployed it (their index; offline, as plan
    is): replace its job, leave it, or leave it unless `--upgrade`."""
    from trainstack.deploy.index import RunIndex
    from trainstack.deploy.upgrades import against_deployed
    from trainstack.statehome import state_home

    stack, digest = result.stack, str(result.outputs.get("specHash", ""))
    for entry in RunIndex(state_home()).entries():
        if entry.stack == stack and entry.env == env and result.identity is not None:
            click.echo(against_deployed(entry, result.identity, digest), file=out)


def _is_sweep(path: Path) -> bool:
    from trainstack.spec.loader import shown
    from trainstack.yamlsource import load

    data = load(shown(path)).data
    return isinstance(data, dict) and data.get("kind") == "Sweep"


def _plan_sweep(
    path: Path,
    env: str,
    as_json: bool,
    project: Path | None,
    out: TextIO,
    params: Overrides | None,
) -> None:
    from rich.console import Console

    from trainstack.plan.report import console_width, plan_json, print_plan
    from trainstack.sweep.planning import plan_sweep
    from trainstack.sweep.view import params_text

    plans = plan_sweep(path, env, project, params or {})
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "trial": p.number,
                        "run": p.name,
                        "stack": p.stack,
                        "params": p.params,
                        "plan": json.loads(plan_json(p.plan, kind="run", env=env)),
                    }
                    for p in plans
                ],
                indent=2,
            ),
            file=out,
        )
        return
    width = console_width(out.isatty())
    console = Console(file=out, width=width)
    click.echo(f"the first batch: {len(plans)} trial(s), one run stack each", file=out)
    for p in plans:
        click.echo(
            f"\ntrial {p.number}: {p.name} ({params_text(p.params)}) -> stack {p.stack}", file=out
        )
        print_plan(p.plan, console, kind="run", env=env)
