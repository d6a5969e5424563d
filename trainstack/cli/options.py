"""Options several verbs share, defined once: the state home, the run stacks' backend, the
platform project, the components directory. Each also reads its environment variable, so a team
sets them once."""

from __future__ import annotations

from pathlib import Path

import click

home_option = click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="TRAINSTACK_HOME",
    help="State directory: run registry, local runs, stack index, passphrase (default "
    "$TRAINSTACK_HOME, else $XDG_STATE_HOME/trainstack or ~/.local/state/trainstack).",
)
backend_option = click.option(
    "--backend",
    default=None,
    metavar="URL",
    envvar="TRAINSTACK_BACKEND_URL",
    help="Pulumi backend of the run stacks (default $TRAINSTACK_BACKEND_URL, else a file "
    "backend in the state home).",
)
project_option = click.option(
    "--project",
    "project",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="TRAINSTACK_PROJECT",
    help="The platform project (the folder with Pulumi.yaml and Pulumi.<env>.yaml; default "
    "$TRAINSTACK_PROJECT, else the nearest one at or above the current directory).",
)
components_option = click.option(
    "--components",
    "components_dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="TRAINSTACK_COMPONENTS",
    help="Directory that resolves `component: name@version` references (default "
    "$TRAINSTACK_COMPONENTS).",
)
env_option = click.option(
    "--env", "env", default=None, help="the environment, when the run is deployed in several"
)
