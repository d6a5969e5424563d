"""``trainstack scope publish --env ENV --team TEAM``: write a team's secrets scope."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.cli.options import backend_option, environment, home_option


@click.group()
def scope() -> None:
    """Per-team secrets scopes: what a team's runs read, encrypted with the team's passphrase."""


@scope.command()
@environment("environment: the platform stack Pulumi.<ENV>", required=True)
@click.option("--team", "team", required=True, help="the team whose scope to write")
@home_option
@backend_option
def publish(env: str, team: str, home: Path | None, backend: str | None) -> None:
    """Mint TEAM's expiring token and write its scope of ENV from the platform stack (run with
    the platform's passphrase; the team's is read from $TRAINSTACK_TEAM_PASSPHRASE)."""
    from trainstack.deploy import scope as scopes
    from trainstack.deploy.settings import load_settings
    from trainstack.deploy.workspace import find_pulumi

    command = find_pulumi()
    passphrase = scopes.team_passphrase()
    done = scopes.publish(
        env, team, command=command, settings=load_settings(home, backend), passphrase=passphrase
    )
    click.echo(
        f"published team {team}'s scope of {env}: stack {done.stack}; its members deploy with "
        f"PULUMI_CONFIG_PASSPHRASE set to the team's passphrase"
    )
    click.echo(
        f"its token expires at {done.expires} ({done.hours_asked}h asked; the API server may "
        f"grant less); the previous one is revoked. Publish again before then."
    )
