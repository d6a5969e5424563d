"""`trainstack report RUN -o report.html`: one self-contained HTML page about a run."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import environment, home_option, project_option, store_option


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The HTML file to write.",
)
@environment("Price the run at this environment's rates (default: its env tag or stack's).")
@project_option
@store_option
@home_option
def report(
    run_ref: str,
    output: Path,
    env: str | None,
    project: Path | None,
    store: Path | None,
    home: Path | None,
) -> None:
    """Write one HTML file with a run's charts, parameters, resources, usage, outcome and the
    tail of each replica's log, to attach to a ticket (a deployed run: its outcome, cost and
    recovery history)."""
    from trainstack.deploy.podrecords import find
    from trainstack.metrics import cost
    from trainstack.metrics.htmlreport import build, render
    from trainstack.metrics.podledger import ledger
    from trainstack.metrics.runview import deployed_view, view
    from trainstack.outfile import write_file

    run = find(run_ref, home=home, mount=store)
    record, history = run.record, run.history
    shown = deployed_view(record) if run.pods is not None and record.run_dir is None else None
    found = ledger(record, history, env, project, run.pods)
    html = render(
        build(
            shown or view(record),
            history,
            cost=cost.summary(record, env, project, run.pods),
            goodput=found.lines() if found else (),
        )
    )
    write_file(output, html)
    click.echo(f"wrote {output}")
