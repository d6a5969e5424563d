"""Which stack a deployed run is: this user's stack index first, else the backend's run index
and stack tags (a run a teammate deployed), through the Pulumi CLI only when a stack can be
there at all."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.deploy.clierrors import cli_errors
from trainstack.deploy.index import RunIndex, StackEntry
from trainstack.deploy.settings import DeploySettings, load_settings, nothing_deployed
from trainstack.errors import NotFoundError, ToolMissingError
from trainstack.registry.home import state_home

if TYPE_CHECKING:
    from pulumi import automation as auto


@dataclass(frozen=True)
class Located:
    entry: StackEntry
    settings: DeploySettings
    command: auto.PulumiCommand


def locate(
    run: str,
    env: str | None = None,
    *,
    team: str | None = None,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
) -> Located:
    """The stack of deployed ``run``: this user's index, else the backend's stack tags (a run a
    teammate deployed). A typo creates nothing: the backend is asked only when this home exists
    or a backend is named (the default file backend lives inside the home)."""
    import os

    from trainstack.deploy.index import backend_entries
    from trainstack.deploy.settings import BACKEND_ENV
    from trainstack.deploy.workspace import find_pulumi

    root = home or state_home()
    index = RunIndex(root)
    try:
        entry = index.find(run, env, team)
    except NotFoundError as missing:
        chosen = backend or os.environ.get(BACKEND_ENV)
        if not (chosen or root.exists()):
            raise
        try:
            cli = command or find_pulumi()
        except ToolMissingError:
            if nothing_deployed(root, chosen):  # no stack to ask the CLI about: say so
                raise missing from None
            raise
        settings = load_settings(root, chosen)
        with cli_errors("listing the run stacks", settings, ""):
            shared = backend_entries(settings, cli)
        known = shared + [e for e in index.entries() if e.stack not in {s.stack for s in shared}]
        found = RunIndex.pick(known, run, env, team, where=settings.backend_url)
        if found in shared:  # the backend's copy of its tags may lag a concurrent deploy
            found = _from_own_tags(found, settings, cli)
        return Located(found, settings, cli)
    cli = command or find_pulumi()
    return Located(entry, load_settings(root, entry.backend), cli)


def _from_own_tags(
    entry: StackEntry, settings: DeploySettings, command: auto.PulumiCommand
) -> StackEntry:
    from trainstack.deploy.index import entry_from_tags
    from trainstack.deploy.workspace import runs_workspace

    with cli_errors(f"reading the tags of {entry.stack}", settings, entry.stack):
        tags = runs_workspace(settings, command).list_tags(entry.stack)
    return entry_from_tags(entry.stack, tags, settings.backend_url) or entry


def deployed(
    *,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
) -> list[StackEntry]:
    """Every run deployed in the backend (from its stack tags), with this user's registry ids."""
    from trainstack.deploy.index import backend_entries
    from trainstack.deploy.workspace import find_pulumi

    try:
        cli = command or find_pulumi()
    except ToolMissingError:
        if nothing_deployed(home or state_home(), backend):  # no CLI needed to say "none"
            return []
        raise
    settings = load_settings(home, backend)
    mine = {e.stack: e for e in RunIndex(settings.home).entries()}
    with cli_errors("listing the run stacks", settings, ""):
        shared = backend_entries(settings, cli)
    return [
        replace(e, registry_id=mine[e.stack].registry_id) if e.stack in mine else e for e in shared
    ]
