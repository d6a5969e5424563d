"""``trainstack plan``: what ``pulumi up`` would create, offline, without cloud credentials."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from trainstack.cli.options import environment, output_format, project_option


@click.command()
@click.argument("run_file", required=False, type=click.Path(path_type=Path))
@environment("environment: Pulumi.<ENV>.yaml", required=True)
@output_format("text", "json", help="json: the plan as data", json_alias=True)
@project_option
def plan(run_file: Path | None, env: str, fmt: str, project: Path | None) -> None:
    """Plan the platform (no RUN_FILE) or one run's stack (RUN_FILE), offline under mocks. A
    Sweep file plans the run stacks of the sweep's first batch of trials."""
    from rich.console import Console

    from trainstack.envfile import find_project
    from trainstack.plan import service
    from trainstack.plan.report import console_width, plan_json, print_plan
    from trainstack.policy.check import check_plan
    from trainstack.policy.report import text

    if run_file is not None and _is_sweep(run_file):
        _plan_sweep(run_file, env, fmt == "json", project)
        return
    if run_file is None:
        result, kind = service.plan_platform(env, project), "platform"
        outputs = result.outputs
    else:
        result, kind = service.plan_run(run_file, env, project), "run"
        outputs = service.platform_outputs(find_project(project), env)[0]
    if fmt == "json":
        # one document for machines; `trainstack policy check --format json` has the violations
        click.echo(plan_json(result, kind=kind, env=env))
        return
    # Piped or captured output gets a wide table rather than rich's 80-column default.
    width = console_width(sys.stdout.isatty())
    print_plan(result, Console(file=sys.stdout, width=width), kind=kind, env=env)
    report = check_plan(result, env, str(run_file or "platform"), outputs, project)
    click.echo("policy: " + text([report]))


def _is_sweep(path: Path) -> bool:
    from trainstack.spec.loader import shown
    from trainstack.yamlsource import load

    data = load(shown(path)).data
    return isinstance(data, dict) and data.get("kind") == "Sweep"


def _plan_sweep(path: Path, env: str, as_json: bool, project: Path | None) -> None:
    import json

    from rich.console import Console

    from trainstack.plan.report import console_width, plan_json, print_plan
    from trainstack.sweep.planning import plan_sweep
    from trainstack.sweep.view import params_text

    plans = plan_sweep(path, env, project)
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
            )
        )
        return
    width = console_width(sys.stdout.isatty())
    console = Console(file=sys.stdout, width=width)
    click.echo(f"the first batch: {len(plans)} trial(s), one run stack each")
    for p in plans:
        click.echo(f"\ntrial {p.number}: {p.name} ({params_text(p.params)}) -> stack {p.stack}")
        print_plan(p.plan, console, kind="run", env=env)
