"""``trainstack cost``: what runs cost, per team, experiment, component or run
(trainstack.deploy.costreport)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from trainstack.cli.options import (
    backend_option,
    environment,
    home_option,
    output_format,
    project_option,
    store_option,
)
from trainstack.metrics.rollup import BY


@click.command()
@click.option("--team", metavar="TEAM", help="Only this team's runs (its name or namespace).")
@environment("Only runs of this environment (each run is priced at its own environment's rates).")
@click.option(
    "--since",
    metavar="WHEN",
    default="30d",
    show_default=True,
    help="Only runs created since: a duration ago (30m, 2h, 7d) or a date/time.",
)
@click.option("--by", type=click.Choice(BY), default="team", show_default=True)
@click.option("--goodput", is_flag=True, help="Add the goodput ledger's parts.")
@output_format("text", "json", help="json: the groups as data")
@project_option
@store_option
@home_option
@backend_option
def cost(
    team: str | None,
    env: str | None,
    since: str,
    by: str,
    goodput: bool,
    fmt: str,
    project: Path | None,
    store: Path | None,
    home: Path | None,
    backend: str | None,
) -> None:
    """Resource-time and cost of the runs deployed in the backend (anyone's, from their pod
    lifetimes in the artifact store) and of this registry's runs, rolled up per group."""
    from trainstack.deploy.costreport import report
    from trainstack.humanize import parse_since
    from trainstack.metrics.rollup import table

    found = report(
        by=by,
        since=parse_since(since),
        team=team,
        env=env,
        goodput=goodput,
        home=home,
        mount=store,
        backend=backend,
        project=project,
    )
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)
    if found.unpriced_deployed:
        click.echo(
            f"note: {found.unpriced_deployed} deployed run(s) not priced: no pod lifetimes "
            "readable from here (mount a claim or NAS store with --store; OSS needs credentials)",
            err=True,
        )
    if fmt == "json":
        doc = {
            "by": by,
            "groups": [g.to_json(goodput) for g in found.groups],
            "unpricedDeployed": found.unpriced_deployed,
        }
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    elif not found.groups:
        click.echo("no runs", err=True)
    else:
        click.echo(table(found.groups, by, goodput))
