"""``trainstack gc``: destroy the stacks of a team's runs that ended more than N days ago."""

from __future__ import annotations

import json
from pathlib import Path

import click

from trainstack.cli.options import backend_option, environment, home_option, output_format


@click.command()
@environment("the environment whose run stacks are collected", required=True)
@click.option("--team", "team", required=True, help="the team (or its namespace) whose runs")
@click.option(
    "--older-than",
    "older_than",
    type=click.FloatRange(min=0),
    default=None,
    metavar="DAYS",
    help="runs that ended more than DAYS ago (default: the platform's gcAfterDays)",
)
@click.option("--dry-run", is_flag=True, help="list the runs it would destroy; change nothing")
@output_format("text", "json", help="json: each run's verdict as data")
@home_option
@backend_option
def gc(
    env: str,
    team: str,
    older_than: float | None,
    dry_run: bool,
    fmt: str,
    home: Path | None,
    backend: str | None,
) -> None:
    """Destroy the stacks of TEAM's finished runs (data, logs and records kept)."""
    from trainstack.deploy.gc import as_data, collect, view
    from trainstack.errors import UserError

    def progress(line: str) -> None:
        click.echo(line, err=True)

    verdicts = collect(
        env,
        team,
        older_than_days=older_than,
        dry_run=dry_run,
        home=home,
        backend=backend,
        on_output=None if fmt == "json" else progress,
    )
    if fmt == "json":
        click.echo(json.dumps(as_data(verdicts), indent=2, sort_keys=True))
    else:
        click.echo(view(verdicts))
    failed = [v.entry.run for v in verdicts if v.action == "failed"]
    if failed:
        raise UserError(f"gc could not destroy {len(failed)} run(s): {', '.join(failed)}")
