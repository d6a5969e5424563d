"""`trainstack runs list|show`: the run registry."""

from __future__ import annotations

import json
from pathlib import Path

import click

from trainstack.cli.options import (
    environment,
    home_option,
    output_format,
    project_option,
    store_option,
)
from trainstack.errors import UserError
from trainstack.humanize import parse_since

_STATUSES = ("pending", "running", "succeeded", "failed", "cancelled", "interrupted")


@click.group()
def runs() -> None:
    """List and inspect recorded runs."""


@runs.command("list")
@click.option("--name", help="Only runs with this name.")
@click.option("--experiment", help="Only runs of this experiment.")
@click.option("--status", type=click.Choice(_STATUSES), help="Only runs in this status.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Only runs with this tag.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only runs created since: a duration ago (30m, 2h, 7d) or a date/time.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many (newest first).")
@click.option(
    "--metric",
    metavar="NAME",
    help="Add a column with each run's best value of this metric (chart/series) and "
    "sort by it, best first.",
)
@click.option(
    "--cost",
    is_flag=True,
    help="Add each run's resource-time, its cost at its environment's rates "
    "(trainstack:costs) and the idle share.",
)
@environment(
    "With --cost: price every run at this environment's rates (default: each run's "
    "env tag, or its stack's environment)."
)
@project_option
@store_option
@output_format("text", "json", help="json: the runs as data", json_alias=True)
@home_option
def list_runs(
    name: str | None,
    experiment: str | None,
    status: str | None,
    tags: tuple[str, ...],
    since: str | None,
    limit: int | None,
    metric: str | None,
    cost: bool,
    env: str | None,
    project: Path | None,
    store: Path | None,
    fmt: str,
    home: Path | None,
) -> None:
    """List runs, newest first (with --metric, best first)."""
    from trainstack.local import runlist
    from trainstack.registry import Registry, RunFilter, RunStatus, state_home

    flt = RunFilter(
        name=name,
        experiment=experiment,
        status=RunStatus(status) if status else None,
        tags=_tags(tags),
        since=parse_since(since) if since else None,
        limit=limit,
    )
    with Registry.open(state_home(home)) as reg:
        reg.mark_interrupted()
        records = reg.list(flt)
    found = runlist.listing(records, metric)
    if cost:
        from trainstack.deploy.podrecords import lifetimes

        pods, problems = lifetimes(found.records, store)
        for problem in problems:
            click.echo(f"warning: {problem}", err=True)
        found = runlist.with_costs(found, env, project, pods)
    if fmt == "json":
        click.echo(json.dumps(runlist.to_json(found), indent=2))
    elif not found.records:
        click.echo("no runs", err=True)
    else:
        click.echo(runlist.table(found))


@runs.command("show")
@click.argument("run_ref", metavar="RUN")
@output_format("text", "json", help="json: the run as data", json_alias=True)
@environment("Price the run at this environment's rates (default: its env tag or stack's).")
@project_option
@store_option
@home_option
def show(
    run_ref: str,
    fmt: str,
    env: str | None,
    project: Path | None,
    store: Path | None,
    home: Path | None,
) -> None:
    """Show one run: status, replicas, restarts, outputs, logs, metrics, resource usage, cost
    (a deployed run's, a teammate's too, from its pods' lifetimes in the artifact store)."""
    from dataclasses import replace

    from trainstack.deploy.podrecords import find
    from trainstack.local import report
    from trainstack.metrics import cost
    from trainstack.metrics.podledger import ledger

    found = find(run_ref, home=home, mount=store)
    record, history = found.record, found.history
    details = replace(
        report.details(record, history=history),
        cost=cost.summary(record, env, project, found.pods),
        goodput=ledger(record, history, env, project, found.pods),
    )
    if fmt == "json":
        click.echo(json.dumps(report.to_json(details), indent=2))
    else:
        click.echo(report.render(details))


@runs.command("compare")
@click.argument("run_refs", metavar="RUN...", nargs=-1, required=True)
@click.option(
    "--overlay", metavar="METRIC", help="Draw this metric of every run on one chart (with --png)."
)
@click.option(
    "--png",
    "png",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the --overlay chart.",
)
@environment(
    "Price every run at this environment's rates (default: each run's env tag or stack's)."
)
@project_option
@home_option
def compare(
    run_refs: tuple[str, ...],
    overlay: str | None,
    png: Path | None,
    env: str | None,
    project: Path | None,
    home: Path | None,
) -> None:
    """Parameters, resources, cost and metrics of several runs side by side."""
    from trainstack.metrics import compare as cmp
    from trainstack.metrics import cost
    from trainstack.metrics.runview import view
    from trainstack.registry import Registry, state_home

    if (overlay is None) != (png is None):
        raise UserError(
            "--overlay and --png go together",
            hint="trainstack runs compare A B --overlay epoch/loss --png loss.png",
        )
    with Registry.open(state_home(home)) as reg:
        reg.mark_interrupted()
        records = [reg.resolve(ref) for ref in run_refs]
    views = [view(r) for r in records]
    if overlay is not None and png is not None:
        from trainstack.outfile import write_file

        write_file(png, cmp.overlay(views, overlay))
    priced = cost.priced(records, env, project)
    click.echo(cmp.side_by_side(views, {k: p.cells() for k, p in priced.items()}))
    if png is not None:
        click.echo(f"wrote {png}")


def _tags(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--tag {item!r}: expected KEY=VALUE", hint="--tag team=vision")
        out[key] = value
    return out
