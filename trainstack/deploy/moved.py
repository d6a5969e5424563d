"""A run renamed, or moved to another team, leaves its old stack behind: said at deploy.

A run's stack is ``<env>.<namespace>.<run>``, so a new ``metadata.name`` or ``team`` makes the
next deploy create a new stack, and the old one's job goes on running and counting against its
team's quota. Nothing destroys it here: the old job may hold the only copy of a result still
being trained, and a rename may be meant to run beside it. So deploy looks, in the backend's one
listing (``index.backend_entries``: two CLI calls whatever the number of stacks), for another
stack in the same environment deployed from the same run file (the stack tag ``file``: the
file's path inside its repository, the same on every clone and in CI) of the same component
(two repositories on one backend may both hold ``runs/train.yaml``), and says how to end it.

A stack deployed before stacks recorded their file cannot be matched by it; for those, the same
component and experiment stand in, and only on the first deploy of a new stack (a rename or a
team change always creates one): siblings in one experiment are common, so that notice says
"if", and is not repeated on every redeploy.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.deploy.index import RUN_FILE_KEY, StackEntry, backend_entries

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings
    from trainstack.spec.model import Run


def file_tag(run_file: Path, project_root: Path | None) -> str | None:
    """The run file's path as every clone of its repository names it: relative to the nearest
    folder above it holding ``.git`` (a clone, a worktree, CI's checkout), else to the platform
    project's folder when the file is inside it; None for a file in neither (nothing to match)."""
    path = run_file.resolve()
    for folder in path.parents:
        if (folder / ".git").exists():
            return path.relative_to(folder).as_posix()
    if project_root is not None and path.is_relative_to(project_root.resolve()):
        return path.relative_to(project_root.resolve()).as_posix()
    return None


@dataclass(frozen=True)
class Left:
    """Another stack of this run, left by a rename or a team change."""

    entry: StackEntry
    by_file: bool  # matched by its run file; else by component and experiment (an older stack)


def left_behind(
    entries: Sequence[StackEntry], run: Run, env: str, namespace: str, run_file: str | None
) -> list[Left]:
    """The stacks in ``entries`` that this deploy of ``run`` leaves behind (never its own: the
    same run name in the same namespace, whichever way its stack is named)."""
    in_env = [e for e in entries if e.env == env]
    own = [e for e in in_env if e.run == run.name and e.namespace == namespace]
    others = [e for e in in_env if e not in own and e.component == run.component.name]
    found = [Left(e, True) for e in others if run_file and e.outputs.get(RUN_FILE_KEY) == run_file]
    if not own and run.experiment:
        found += [
            Left(e, False)
            for e in others
            if RUN_FILE_KEY not in e.outputs and e.experiment == run.experiment
        ]
    return found


def notice(left: Left, env: str) -> str:
    """What deploy says about a stack left behind: whose it is, why it is still there, and the
    command that ends it (its data stays: PVs are Retain)."""
    entry = left.entry
    team = entry.team or entry.namespace or "?"
    command = shlex.join(
        ["trainstack", "destroy", entry.run, "--env", env, "--team", team, "--yes"]
    )
    whose = f"run {entry.run} of team {team} (stack {entry.stack})"
    if left.by_file:
        return (
            f"notice: {whose} was deployed from this run file and is still deployed: a rename "
            f"or a team change leaves it, and its job runs on, counting against {team}'s quota, "
            f"until it is destroyed: {command}"
        )
    return (
        f"notice: {whose}, of the same component and experiment, was deployed before stacks "
        f"recorded their run file: if this run replaces it, its job runs on, counting against "
        f"{team}'s quota, until it is destroyed: {command}"
    )


def look(
    settings: DeploySettings,
    command: auto.PulumiCommand,
    run: Run,
    env: str,
    namespace: str,
    run_file: str | None,
) -> list[str]:
    """The notices for the stacks this deploy leaves behind. A listing that fails is one notice
    itself: the deploy is what was asked for, and goes on."""
    from pulumi.automation.errors import CommandError

    try:
        entries = backend_entries(settings, command)
    except CommandError as err:
        last = [ln for ln in str(err).splitlines() if ln.strip()][-1:]
        return [
            "notice: the backend's stacks could not be listed, so a stack this run left under "
            f"another name or team is not looked for: {' '.join(last)}"
        ]
    return [notice(left, env) for left in left_behind(entries, run, env, namespace, run_file)]
