"""``trainstack status RUN``: a deployed run's stack — its last update and its outputs."""

from __future__ import annotations

import json
from dataclasses import asdict

import click


@click.command()
@click.argument("run")
@click.option("--env", "env", default=None, help="when the run is deployed in several")
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
def status(run: str, env: str | None, as_json: bool) -> None:
    """Show the stack of a deployed RUN (by name)."""
    from trainstack.deploy.service import status as stack_status

    result = stack_status(run, env)
    entry = result.entry
    if as_json:
        doc = {"run": asdict(entry), "lastUpdate": {"kind": result.last_kind,
               "result": result.last_result, "end": result.last_end},
               "outputs": result.outputs}
        click.echo(json.dumps(doc, indent=2, sort_keys=True, default=str))
        return
    click.echo(f"{entry.run}  env {entry.env}  stack {entry.stack}  ({entry.backend})")
    click.echo(f"  component {entry.component}@{entry.version}"
               + (f"  experiment {entry.experiment}" if entry.experiment else ""))
    last = f"{result.last_kind} {result.last_result}" if result.last_kind else "none"
    click.echo(f"  last update: {last}" + (f" at {result.last_end}" if result.last_end else ""))
    for key, value in sorted(result.outputs.items()):
        click.echo(f"  {key}: {value if isinstance(value, str) else json.dumps(value)}")
