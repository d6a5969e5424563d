"""`trainstack validate PATH...`"""

from __future__ import annotations

from pathlib import Path

import click

from trainstack import API_VERSION
from trainstack.cli.options import components_option, output_format
from trainstack.errors import diagnostics_json
from trainstack.spec.check import validate as validate_paths


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@components_option
@output_format(
    "text",
    "json",
    "github",
    help="json: the diagnostics as data; github: workflow commands "
    "(inline annotations on a pull request).",
)
@click.option(
    "--since",
    "ref",
    metavar="REF",
    default=None,
    help="also fail when a component version that exists at git REF changed its spec "
    "or code without a new version",
)
def validate(
    paths: tuple[Path, ...], components_dir: Path | None, fmt: str, ref: str | None
) -> None:
    """Validate component and run specs (files, or directories searched recursively)."""
    report = validate_paths(paths, components_dir=components_dir)
    if ref is not None:
        from trainstack.ci.versions import check_versions

        report.diagnostics.extend(check_versions(Path.cwd(), ref, paths))
    if fmt == "json":
        click.echo(diagnostics_json(report.diagnostics))
    elif fmt == "github":
        from trainstack.ci.annotations import annotation

        for d in report.diagnostics:
            click.echo(annotation(d))
        click.echo(f"{report.files} file(s), {len(report.diagnostics)} problem(s)")
    else:
        for d in report.diagnostics:
            click.echo(d.render(), err=True)
        if report.files == 0:
            click.echo(f"no spec files found (files with apiVersion: {API_VERSION})", err=True)
        else:
            status = "ok" if report.ok else f"{len(report.diagnostics)} problem(s)"
            click.echo(
                f"{report.files} file(s): {len(report.components)} component(s), "
                f"{len(report.runs)} run(s)"
                + (f", {len(report.sweeps)} sweep(s)" if report.sweeps else "")
                + f" valid; {status}"
            )
    if not report.ok or report.files == 0:
        raise click.exceptions.Exit(2)
