"""``trainstack changed --since REF``: the run specs a git change affects (for CI)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.option(
    "--since",
    "ref",
    required=True,
    metavar="REF",
    help="git ref to compare with (e.g. origin/main, or a push's before commit)",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one run file per line; json: runs, components, platform",
)
def changed(ref: str, fmt: str) -> None:
    """List the run files whose spec or component changed since REF (repository-relative)."""
    from trainstack.ci.changes import changed as find_changes

    result = find_changes(Path.cwd(), ref)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "runs": list(result.runs),
                    "components": list(result.components),
                    "platform": result.platform,
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        for run in result.runs:
            click.echo(run)
