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
    output_format,
    store_option,
    team_option,
)

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry


@click.command()
@click.argument("run", required=False)
@env_option
@team_option
@output_format("text", "json", help="json: the status as data", json_alias=True)
@click.option("--no-live", is_flag=True, help="only the stack: do not ask the cluster")
@store_option
@home_option
@backend_option
def status(
    run: str | None,
    env: str | None,
    team: str | None,
    fmt: str,
    no_live: bool,
    store: Path | None,
    home: Path | None,
    backend: str | None,
) -> None:
    """Show a deployed RUN (by name): its stack, the job's conditions, each replica."""
    from trainstack.deploy import service, statusview
    from trainstack.deploy.kube import ClusterError
    from trainstack.deploy.recovery import from_store, history

    if run is None:
        _list(service.deployed(home=home, backend=backend), fmt == "json")
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
    if state is not None:
        from trainstack.deploy.podrecords import keep

        kept = keep(entry, state, store)
        if kept is not None:
            click.echo(f"warning: {kept}", err=True)
    stored = None if no_live else from_store(entry, store)
    restarts = history(found.settings.home, entry.registry_id, state, stored or [])
    if fmt == "json":
        doc = statusview.document(result, state, problem, restarts)
        click.echo(json.dumps(doc, indent=2, sort_keys=True, default=str))
        if failure is not None:
            raise failure
        return
    for line in statusview.stack_lines(result):
        click.echo(line)
    if failure is not None:
        raise failure  # exit 2: the job's live state is unavailable
    if state is None:
        return
    for line in statusview.job_lines(state, restarts):
        click.echo(line)


def _list(entries: list[StackEntry], as_json: bool) -> None:
    from trainstack.deploy.statusview import deployed

    if as_json:
        click.echo(json.dumps([asdict(e) for e in entries], indent=2, sort_keys=True))
        return
    if not entries:
        click.echo("no deployed runs in this backend", err=True)
        return
    click.echo(deployed(entries))
