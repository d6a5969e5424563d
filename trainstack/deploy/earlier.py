"""What an earlier deploy of a run's stack left, and what it rules out for this one: the entry
it recorded (this user's index, else the stack's tags), another team's run on the stack, a
finished job the cluster has already deleted (deploying it again would train a second time)."""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

from trainstack.deploy.index import RunIndex, StackEntry
from trainstack.deploy.settings import DeploySettings
from trainstack.errors import NotFoundError, UserError

if TYPE_CHECKING:
    from pulumi import automation as auto


def finished_and_gone(
    settings: DeploySettings, entry: StackEntry, command: auto.PulumiCommand
) -> str | None:
    """Why an unchanged deploy must not submit the job again, or None when the job is still on
    the cluster. KubeDL deletes a finished job ``ttlSecondsAfterFinished`` after it ends (and
    XGBoost's by default: docs/kubedl.md); ``up --refresh`` would then drop it from the stack's
    state and create it again, training a second time over the same outputs."""
    from trainstack.deploy import watch
    from trainstack.registry import Registry

    cluster = watch.connect(entry, settings, command)
    job = watch.JobRef.of(entry)
    if cluster.job(job.api_version, job.kind, job.namespace, job.name) is not None:
        return None
    status = None
    if entry.registry_id is not None:
        with Registry.open(settings.home) as registry, suppress(NotFoundError):
            record = registry.get(entry.registry_id)
            if record.status.finished:
                status = f"{record.status}" + (f": {record.reason}" if record.reason else "")
    where = f"{job.kind} {job.namespace}/{job.name}"
    if status is not None:
        head = f"run {entry.run!r} already finished ({status}); its job is gone from the cluster"
    else:
        head = (
            f"run {entry.run!r}: its job is gone from the cluster and its outcome was not "
            "recorded here (`trainstack status` and `wait` record it while the job exists)"
        )
    return (
        f"{head} ({where}: KubeDL deletes a finished job ttlSecondsAfterFinished after it ends, "
        "or it was deleted by hand). Nothing was submitted: the run is unchanged; "
        "`trainstack deploy RUN --env ENV --rerun` trains it again"
    )


def refuse_other_team(
    stack: str, previous: StackEntry | None, namespace: str, team: str | None
) -> None:
    """A stack holds one team's run: deploying another team's run onto it would switch its
    provider to that team's credentials and delete the first team's job."""
    if previous is None:
        return
    theirs = previous.outputs.get("namespace")
    if theirs not in (None, namespace) or (previous.team and team and previous.team != team):
        raise UserError(
            f"stack {stack!r} belongs to team {previous.team or '?'} (namespace "
            f"{theirs or '?'}); run {previous.run!r} here deploys into namespace {namespace}"
            + (f" for team {team}" if team else ""),
            hint="a run stack is one team's run: rename the run, or destroy the other stack "
            "first (`trainstack destroy RUN --team TEAM`)",
        )


def previous_entry(settings: DeploySettings, stack: auto.Stack) -> StackEntry | None:
    """What the last deploy of this stack recorded: this user's index, else the stack's tags in
    the backend (a teammate deployed it); None for a new stack."""
    from trainstack.deploy.index import entry_from_tags

    local = [e for e in RunIndex(settings.home).entries() if e.stack == stack.name]
    if local:
        return local[0]
    return entry_from_tags(stack.name, stack.workspace.list_tags(stack.name), settings.backend_url)
