"""``trainstack queue --env ENV [--team T]``: the Workloads in each team's queue now (Kueue)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from trainstack.cli.options import backend_option, environment, home_option, output_format


@click.command()
@environment("the environment whose queues to show", required=True)
@click.option("--team", default=None, help="only this team's queue")
@output_format("text", "json", help="json: the rows as data")
@home_option
@backend_option
def queue(env: str, team: str | None, fmt: str, home: Path | None, backend: str | None) -> None:
    """List pending and admitted jobs per team: place in line, Kueue's reason, flavors held."""
    from trainstack.deploy.queueview import queue_rows, queue_table
    from trainstack.texttable import plain

    rows = queue_rows(env, team, home=home, backend=backend)
    if fmt == "json":
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
        return
    click.echo(plain(queue_table(rows, env)))
