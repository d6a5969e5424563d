"""`trainstack metrics RUN [--chart NAME] [--png DIR] [--csv DIR]`: a run's charts."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import home_option


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--chart",
    "charts",
    multiple=True,
    metavar="NAME",
    help="Only this chart (repeatable); usage charts are named usage-<replica>.",
)
@click.option(
    "--png",
    "png_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Draw each chart, and each replica's resource usage, as DIR/<chart>.png.",
)
@click.option(
    "--csv",
    "csv_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Export each chart's series, and each replica's usage, as DIR/<chart>.csv.",
)
@home_option
def metrics(
    run_ref: str,
    charts: tuple[str, ...],
    png_dir: Path | None,
    csv_dir: Path | None,
    home: Path | None,
) -> None:
    """Show a run's metrics: the last and best value of each series, or with --png/--csv its
    charts as files. Problems in what the run wrote are reported, never fatal."""
    from trainstack.metrics.files import select, write_csv, write_png
    from trainstack.metrics.runview import view
    from trainstack.metrics.table import values_table
    from trainstack.registry import Registry, state_home

    with Registry.open(state_home(home)) as reg:
        record = reg.resolve(run_ref)
    v = view(record)
    chosen = select(v, charts)
    for p in v.metrics.problems:
        click.echo(f"problem: {p.render()}", err=True)
    for w in v.idle:
        click.echo(f"idle: {w.render()}", err=True)
    if png_dir is None and csv_dir is None:
        found = [m for m in v.values if not charts or m.chart in charts]
        click.echo(values_table(found) if found else f"run {record.id}: no metrics")
        return
    written = []
    if png_dir is not None:
        written.extend(write_png(chosen, png_dir))
    if csv_dir is not None:
        written.extend(write_csv(chosen, csv_dir))
    for path in written:
        click.echo(str(path))
