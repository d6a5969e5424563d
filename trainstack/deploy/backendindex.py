"""The backend's run index: every run stack's tags in one place, read in one CLI call.

A stack's tags stay the truth (``deploy.index``), but the CLI reads them one stack at a time, and
``stack ls --json`` shows no tags: a teammate's lookup cost one ``pulumi`` process per stack in
the backend. So deploy and destroy also keep a copy of each run stack's tags in the outputs of
one more stack in the runs project, ``trainstack-index`` (its name has no dot, so it is never a
run's ``<env>.<namespace>.<run>``), written with ``stack export``/``stack import`` and read with
one ``stack output``.

The copy is a cache checked against the one listing: a stack the listing has and the copy lacks
(deployed by an older trainstack, or an index write that lost a race with another deploy: the
CLI has no compare-and-swap) is read from its own tags; an entry whose stack is gone is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings

INDEX_STACK = "trainstack-index"
_OUTPUT = "runs"  # the index stack's one output: stack name -> its trainstack:* tags


def is_run_stack(name: str) -> bool:
    return "." in name


def read(workspace: auto.LocalWorkspace) -> dict[str, dict[str, str]]:
    """The copy as stored (one ``stack output``); empty when there is no index stack yet."""
    from pulumi.automation.errors import CommandError

    args = ["stack", "output", "--json", "--stack", INDEX_STACK]
    try:
        result = workspace.pulumi_command.run(args, workspace.work_dir, dict(workspace.env_vars))
    except CommandError as err:
        if _missing(err):
            return {}
        raise
    return _runs(_loads(result.stdout))


def tags_of(workspace: auto.LocalWorkspace, listed: list[str]) -> dict[str, dict[str, str]]:
    """The tags of each listed run stack: from the copy, else (not in it) from the stack."""
    stored = read(workspace)
    return {
        name: stored[name] if name in stored else dict(workspace.list_tags(name))
        for name in listed
        if is_run_stack(name)
    }


def update(
    settings: DeploySettings,
    command: auto.PulumiCommand,
    stack: str,
    tags: Mapping[str, str] | None,
) -> None:
    """Put ``stack``'s tags in the copy (None: drop it). Raises the CLI's ``CommandError``."""
    from pulumi.automation import Deployment
    from pulumi.automation.errors import CommandError

    from trainstack.deploy.workspace import runs_workspace

    workspace = runs_workspace(settings, command)
    try:
        state = workspace.export_stack(INDEX_STACK)
    except CommandError as err:
        if not _missing(err):
            raise
        if tags is None:
            return  # no index yet: nothing to drop
        workspace.create_stack(INDEX_STACK)
        state = workspace.export_stack(INDEX_STACK)
    deployment: dict[str, Any] = dict(state.deployment or {})
    resources = [r for r in deployment.get("resources") or [] if isinstance(r, dict)]
    root = next((r for r in resources if r.get("type") == "pulumi:pulumi:Stack"), None)
    if root is None:
        root = {"urn": _root_urn(), "custom": False, "type": "pulumi:pulumi:Stack"}
        resources.insert(0, root)
    outputs = dict(root.get("outputs") or {})
    runs = _runs(outputs)
    if tags is None:
        if runs.pop(stack, None) is None:
            return  # nothing to drop: no write
    else:
        runs[stack] = dict(tags)
    root["outputs"] = {**outputs, _OUTPUT: runs}
    deployment["resources"] = resources
    workspace.import_stack(
        INDEX_STACK, Deployment(version=state.version or 3, deployment=deployment)
    )


def publish(
    settings: DeploySettings,
    command: auto.PulumiCommand,
    stack: str,
    tags: Mapping[str, str] | None,
    say: Callable[[str], None] | None,
) -> None:
    """``update``, whose failure is a notice: the deploy or destroy itself is done, and the
    stack's own tags still find it (at one more CLI call for whoever lists the backend)."""
    from pulumi.automation.errors import CommandError

    try:
        update(settings, command, stack, tags)
    except CommandError as err:
        if say is not None:
            last = [ln for ln in str(err).splitlines() if ln.strip()][-1:]
            say(f"the backend's run index ({INDEX_STACK}) was not updated: {' '.join(last)}")


def _root_urn() -> str:
    from trainstack import platformnames as names

    project = names.RUNS_PROJECT
    return f"urn:pulumi:{INDEX_STACK}::{project}::pulumi:pulumi:Stack::{project}-{INDEX_STACK}"


def _missing(err: Exception) -> bool:
    text = str(err)
    return "no stack named" in text or "not found" in text


def _loads(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except ValueError:
        return {}


def _runs(outputs: Any) -> dict[str, dict[str, str]]:
    """The index's entries; anything not shaped as one (a hand edit) is left out, and its stack
    is then read from its own tags."""
    runs = outputs.get(_OUTPUT) if isinstance(outputs, dict) else None
    if not isinstance(runs, dict):
        return {}
    return {
        name: {k: v for k, v in tags.items() if isinstance(k, str) and isinstance(v, str)}
        for name, tags in runs.items()
        if isinstance(name, str) and isinstance(tags, dict)
    }
