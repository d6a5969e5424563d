"""``trainstack gc``: destroy the stacks of one team's runs whose job ended long enough ago.

A finished run's stack keeps its PVs, claims and ConfigMaps (and a backend's resources) until
someone destroys it. gc destroys those of runs that ended more than N days ago (the platform's
``gcAfterDays`` unless given), as ``destroy`` does: the data stays (the PVs are ``Retain``), the
registry record and where the logs were shipped stay. It decides from what is known for sure:

- the job on the cluster: its Succeeded/Failed (batch: Complete/Failed) condition and when it
  became true; a job still pending or running is kept;
- a job already gone (KubeDL's TTL): when gc last saw it end, kept on the stack in the tag
  ``trainstack:ended`` with the job's digest (a redeployed job is another job), else this user's
  registry record of its end;
- anything else (the cluster not answering, a job gone before anyone saw it end) is unknown,
  and kept.

Run again, it finds nothing more to do: nightly from CI is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.deploy.index import TAG, StackEntry
from trainstack.errors import UserError
from trainstack.registry.home import registry_path

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.kube import Cluster
    from trainstack.deploy.settings import DeploySettings

ENDED_TAG = TAG + "ended"


@dataclass(frozen=True)
class Verdict:
    entry: StackEntry
    state: str  # succeeded, failed, running, pending, unknown
    ended: datetime | None
    action: str  # destroyed, to destroy (--dry-run), kept, failed
    why: str


def collect(
    env: str,
    team: str,
    *,
    older_than_days: float | None = None,
    dry_run: bool = False,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
    now: datetime | None = None,
    on_output: Callable[[str], None] | None = None,
) -> list[Verdict]:
    """Judge every run stack of ``team`` in ``env``; destroy (unless ``dry_run``) those ended
    more than the age ago. A destroy that fails is reported and the others go on."""
    from trainstack.deploy.platform import read_source_outputs
    from trainstack.deploy.service import deployed
    from trainstack.deploy.settings import load_settings
    from trainstack.deploy.workspace import find_pulumi

    cli = command or find_pulumi()
    settings = load_settings(home, backend)
    outputs, _ = read_source_outputs(settings, env, team, cli)
    _check_team(team, outputs.get("namespaces"), env)
    days = older_than_days if older_than_days is not None else _default_days(outputs)
    # with this user's registry ids: the record of a run deployed from here says when it ended
    listed = deployed(command=cli, home=settings.home, backend=settings.backend_url)
    entries = [e for e in listed if e.env == env and e.of_team(team)]
    cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
    clusters: dict[tuple[str, str], Cluster | Exception] = {}
    verdicts = []
    for entry in entries:
        state, ended, why = _ended(settings, entry, cli, clusters)
        if ended is None or ended > cutoff:
            if ended is not None and not dry_run and _from_tag(entry) != ended:
                _remember_end(settings, cli, entry, ended)  # its job may be gone by next time
            why = why if ended is None else f"ended {_day(ended)}, within {days:g} days"
            verdicts.append(Verdict(entry, state, ended, "kept", why))
            continue
        verdicts.append(_collected(settings, cli, entry, state, ended, days, dry_run, on_output))
    return verdicts


def _collected(
    settings: DeploySettings,
    cli: auto.PulumiCommand,
    entry: StackEntry,
    state: str,
    ended: datetime,
    days: float,
    dry_run: bool,
    on_output: Callable[[str], None] | None,
) -> Verdict:
    why = f"ended {_day(ended)}, more than {days:g} days ago"
    if dry_run:
        return Verdict(entry, state, ended, "to destroy", why)
    from trainstack.deploy.service import destroy

    try:
        destroy(
            entry.run,
            entry.env,
            team=entry.namespace or entry.team,
            command=cli,
            home=settings.home,
            backend=settings.backend_url,
            on_output=on_output,
        )
    except UserError as err:
        return Verdict(entry, state, ended, "failed", err.message.splitlines()[-1])
    return Verdict(entry, state, ended, "destroyed", why)


def _ended(
    settings: DeploySettings,
    entry: StackEntry,
    cli: auto.PulumiCommand,
    clusters: dict[tuple[str, str], Cluster | Exception],
) -> tuple[str, datetime | None, str]:
    """The run's state, when its job ended (None: not ended, or not known), and why."""
    from trainstack.deploy.jobstate import job_state
    from trainstack.deploy.watch import JobRef

    job = JobRef.of(entry)
    try:
        cluster = _cluster(settings, entry, cli, clusters)
        obj = cluster.job(job.api_version, job.kind, job.namespace, job.name)
        state = None if obj is None else job_state(job.kind, job.name, job.namespace, obj, [])
    except UserError as err:  # the cluster unreachable, its answer malformed: not known
        return "unknown", None, f"its job could not be read: {err.message.splitlines()[0]}"
    if state is not None:
        if not state.outcome.finished:
            return str(state.outcome), None, f"its job is {state.outcome}"
        decided = [c for c in state.conditions if c.status == "True" and c.since]
        ended = _parse(decided[-1].since) if decided else None
        why = "" if ended else "its job ended at a time the cluster did not say"
        return str(state.outcome), ended, why
    remembered = _from_tag(entry)
    if remembered is not None:
        return "gone", remembered, ""
    recorded = _from_registry(settings, entry)
    if recorded is not None:
        return recorded
    return "unknown", None, "its job is gone and no one recorded when it ended"


def _cluster(
    settings: DeploySettings,
    entry: StackEntry,
    cli: auto.PulumiCommand,
    clusters: dict[tuple[str, str], Cluster | Exception],
) -> Cluster:
    """One client per platform source and namespace (each costs the CLI a read of outputs)."""
    from trainstack.deploy.watch import connect

    key = (str(entry.outputs.get("platformStack") or ""), entry.namespace or "")
    if key not in clusters:
        try:
            clusters[key] = connect(entry, settings, cli)
        except UserError as err:
            clusters[key] = err
    found = clusters[key]
    if isinstance(found, Exception):
        raise found
    return found


def _from_tag(entry: StackEntry) -> datetime | None:
    value = str(entry.outputs.get("ended") or "")
    when, _, digest = value.partition(" ")
    if not when or digest != (entry.spec_hash or ""):
        return None  # another job's end: the run was deployed again since
    return _parse(when)


def _from_registry(settings: DeploySettings, entry: StackEntry) -> tuple[str, datetime, str] | None:
    from trainstack.errors import NotFoundError
    from trainstack.registry import Registry

    if entry.registry_id is None or not registry_path(settings.home).exists():
        return None
    with Registry.open(settings.home) as registry:
        try:
            record = registry.get(entry.registry_id)
        except NotFoundError:
            return None
    if not record.status.finished or record.finished_at is None:
        return None
    return str(record.status), datetime.fromtimestamp(record.finished_at, UTC), ""


def _ended_tag(ended: datetime, entry: StackEntry) -> str:
    return f"{ended.strftime('%Y-%m-%dT%H:%M:%SZ')} {entry.spec_hash or ''}".strip()


def _remember_end(
    settings: DeploySettings, cli: auto.PulumiCommand, entry: StackEntry, ended: datetime
) -> None:
    from trainstack.deploy import backendindex
    from trainstack.deploy.workspace import runs_workspace

    workspace = runs_workspace(settings, cli)
    workspace.set_tag(entry.stack, ENDED_TAG, _ended_tag(ended, entry))
    backendindex.publish(settings, cli, entry.stack, workspace.list_tags(entry.stack), None)


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _day(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _default_days(outputs: dict[str, object]) -> float:
    from trainstack import platformnames as names
    from trainstack.infra.platform.config import DEFAULT_GC_AFTER_DAYS

    value = outputs.get(names.OUT_GC_AFTER_DAYS)
    # a platform deployed before it exported the setting: its default
    return float(value) if isinstance(value, (int, float)) and value > 0 else DEFAULT_GC_AFTER_DAYS


def _check_team(team: str, namespaces: object, env: str) -> None:
    """A team the environment does not have is one error, not an empty list of runs."""
    if not isinstance(namespaces, dict) or not namespaces:
        return  # a platform that exports no teams: runs are matched as they are tagged
    if team in namespaces or team in namespaces.values():
        return
    from trainstack.suggest import did_you_mean

    raise UserError(
        f"environment {env!r} has no team {team!r} (teams: {', '.join(sorted(namespaces))})"
        + did_you_mean(team, namespaces)
    )


def view(verdicts: list[Verdict]) -> str:
    """One row per run stack of the team: what gc did (or, --dry-run, would do) and why."""
    from trainstack.texttable import plain, table

    if not verdicts:
        return "no run stacks of this team in this environment"
    rows = [(v.action, v.entry.run, v.state, v.why, v.entry.stack) for v in _ordered(verdicts)]
    return plain(table(("action", "run", "state", "why", "stack"), rows))


def as_data(verdicts: list[Verdict]) -> list[dict[str, object]]:
    return [
        {
            "run": v.entry.run,
            "stack": v.entry.stack,
            "team": v.entry.team or v.entry.namespace,
            "state": v.state,
            "ended": v.ended.isoformat() if v.ended else None,
            "action": v.action,
            "why": v.why,
        }
        for v in _ordered(verdicts)
    ]


def _ordered(verdicts: list[Verdict]) -> list[Verdict]:
    """What changes first (destroyed, to destroy, failed), then what is kept."""
    return sorted(verdicts, key=lambda v: (v.action == "kept", v.entry.run))
