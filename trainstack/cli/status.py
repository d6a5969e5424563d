"""``trainstack status [RUN]``: a deployed run — its stack and its job on the cluster now.

Without RUN: every run deployed in the backend (read from the run stacks' tags, so a teammate's
runs are listed too).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trainstack.cli.options import (
    backend_option,
    env_option,
    home_option,
    store_option,
    team_option,
)

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry


@click.command()
@click.argument("run", required=False)
@env_option
@team_option
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
@click.option("--no-live", is_flag=True, help="only the stack: do not ask the cluster")
@store_option
@home_option
@backend_option
def status(
    run: str | None,
    env: str | None,
    team: str | None,
    as_json: bool,
    no_live: bool,
    store: Path | None,
    home: Path | None,
    backend: str | None,
) -> None:
    """Show a deployed RUN (by name): its stack, the job's conditions, each replica."""
    from trainstack.deploy import service
    from trainstack.deploy.kube import ClusterError

    if run is None:
        _list(service.deployed(home=home, backend=backend), as_json)
        return
    found = service.locate(run, env, team=team, home=home, backend=backend)
    result = service.stack_status(found)
    state, problem, failure = None, None, None
    if not no_live:
        try:
            state = service.live(found)
        except ClusterError as err:  # the stack part is still worth showing, then the error
            problem, failure = err.render(), err
    entry = result.entry
    from trainstack import recovery as words
    from trainstack.deploy.recovery import from_store, history

    stored = None if no_live else from_store(entry, store)
    restarts = history(found.settings.home, entry.registry_id, state, stored or [])
    if as_json:
        doc = {
            "run": asdict(entry),
            "lastUpdate": {
                "kind": result.last_kind,
                "result": result.last_result,
                "end": result.last_end,
            },
            "outputs": result.outputs,
            "job": asdict(state) if state else None,
            "jobError": problem,
            "restarts": [{**asdict(r), "replica": r.key} for r in restarts],
        }
        click.echo(json.dumps(doc, indent=2, sort_keys=True, default=str))
        if failure is not None:
            raise failure
        return
    click.echo(f"{entry.run}  env {entry.env}  stack {entry.stack}  ({entry.backend})")
    click.echo(
        f"  component {entry.component}@{entry.version}"
        + (f"  experiment {entry.experiment}" if entry.experiment else "")
    )
    last = f"{result.last_kind} {result.last_result}" if result.last_kind else "none"
    click.echo(f"  last update: {last}" + (f" at {result.last_end}" if result.last_end else ""))
    for key, value in sorted(result.outputs.items()):
        click.echo(f"  {key}: {value if isinstance(value, str) else json.dumps(value)}")
    if failure is not None:
        raise failure  # exit 2: the job's live state is unavailable
    if state is None:
        return
    click.echo(
        f"job {state.kind} {state.namespace}/{state.name}: {state.outcome}"
        + (f" ({state.message})" if state.message else "")
    )
    for cond in state.conditions:
        click.echo(
            f"  condition {cond.type}={cond.status}"
            + (f" {cond.reason}" if cond.reason else "")
            + (f" since {cond.since}" if cond.since else "")
            + (f": {cond.message}" if cond.message else "")
        )
    for why in state.waiting:
        click.echo(f"  waiting: {why}")
    if not state.replicas:
        click.echo("  no pods (yet, or cleaned up)")
    for r in state.replicas:
        code = "-" if r.exit_code is None else str(r.exit_code)
        click.echo(
            f"  {r.role}-{r.index}  {r.phase:<9}  restarts {r.restarts}  exit {code}"
            + (f"  {r.reason}" if r.reason else "")
            + f"  ({r.pod})"
        )
    for restart in restarts:
        click.echo(f"  restart: {words.describe(restart)}")


def _list(entries: list[StackEntry], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([asdict(e) for e in entries], indent=2, sort_keys=True))
        return
    if not entries:
        click.echo("no deployed runs in this backend", err=True)
        return
    for e in entries:
        click.echo(
            f"{e.run}  env {e.env}  team {e.team or '-'}  "
            f"{e.outputs.get('kind', '?')} {e.outputs.get('namespace', '?')}/"
            f"{e.outputs.get('jobName', '?')}  {e.component}@{e.version}"
        )
