"""`trainstack validate PATH...`"""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.errors import diagnostics_json
from trainstack.spec.check import validate as validate_paths


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--components", "components_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Directory that resolves `component: name@version` references.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json prints the diagnostics for CI annotations.")
def validate(paths: tuple[Path, ...], components_dir: Path | None, fmt: str) -> None:
    """Validate component and run specs (files, or directories searched recursively)."""
    report = validate_paths(paths, components_dir=components_dir)
    if fmt == "json":
        click.echo(diagnostics_json(report.diagnostics))
    else:
        for d in report.diagnostics:
            click.echo(d.render(), err=True)
        if report.files == 0:
            click.echo("no spec files found (files with apiVersion: trainstack.dev/v1)", err=True)
        else:
            status = "ok" if report.ok else f"{len(report.diagnostics)} problem(s)"
            click.echo(f"{report.files} file(s): {len(report.components)} component(s), "
                       f"{len(report.runs)} run(s)"
                       + (f", {len(report.sweeps)} sweep(s)" if report.sweeps else "")
                       + f" valid; {status}")
    if not report.ok or report.files == 0:
        raise click.exceptions.Exit(2)
