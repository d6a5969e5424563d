"""``trainstack changed --since REF``: the run specs a git change affects (for CI)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from trainstack.cli.options import environment, output_format, project_option


@click.command()
@click.option(
    "--since",
    "ref",
    required=True,
    metavar="REF",
    help="git ref to compare with (e.g. origin/main, or a push's before commit)",
)
@environment("only the runs whose `env` tag names ENV (JSON lists the others under `elsewhere`)")
@output_format(
    "text",
    "json",
    help="text: one run file per line (a name holding a control character quoted, as Python "
    "writes a string); json: runs, components, platform, elsewhere, removed",
)
@click.option(
    "--removed",
    is_flag=True,
    help="list instead the names of the runs whose file was deleted since REF (their stacks, "
    "if deployed, are left for `trainstack destroy`)",
)
@click.option(
    "--all-if-platform",
    is_flag=True,
    help="when the platform (Pulumi.*, infra/, platform/, policies/) changed, list every run: "
    "what a pull request re-checks against the new config and policies",
)
@project_option
def changed(
    ref: str,
    env: str | None,
    fmt: str,
    removed: bool,
    all_if_platform: bool,
    project: Path | None,
) -> None:
    """List the run files whose spec or component changed since REF (repository-relative).

    With --env, only the runs written for ENV (their `env` tag): what CI plans and deploys there.
    """
    from trainstack.ci.changes import changed as find_changes

    if env is not None:
        # A mistyped environment would list nothing, and CI would quietly deploy nothing.
        from trainstack.envfile import find_project, read_env

        read_env(find_project(project), env)

    result = find_changes(Path.cwd(), ref, env, all_if_platform=all_if_platform)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "runs": list(result.runs),
                    "components": list(result.components),
                    "platform": result.platform,
                    "elsewhere": dict(result.elsewhere),
                    "removed": dict(result.removed),
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        from trainstack.excerpt import one_line

        for line in [name for _, name in result.removed] if removed else result.runs:
            click.echo(one_line(line))
