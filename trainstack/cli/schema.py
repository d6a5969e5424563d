"""`trainstack schema component|run`: print the JSON Schema of a spec kind (for editors)."""

from __future__ import annotations

import json

import click


@click.command()
@click.argument("kind", type=click.Choice(["component", "run", "sweep"], case_sensitive=False))
def schema(kind: str) -> None:
    """Print the JSON Schema (draft 2020-12) of component, run or sweep specs.

    \b
    Point your editor at it for completion and inline errors, e.g. with the YAML language
    server: `# yaml-language-server: $schema=run.schema.json` at the top of a run file.
    Cross-field rules (constraints, env-var collisions, values against the component) are
    checked only by `trainstack validate`.
    """
    from trainstack.spec.json_schema import json_schema

    click.echo(json.dumps(json_schema(kind.capitalize()), indent=2))
