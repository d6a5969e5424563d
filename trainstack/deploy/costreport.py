"""`trainstack cost`: what runs cost, rolled up per team, experiment, component or run.

It reads the shared records, not one user's registry: every run deployed in the backend (its
stack tags, read as `status` lists them) priced from its `pods.json` in the artifact store
(trainstack.deploy.podrecords), whoever deployed it; and this registry's runs — its local runs,
and its deployed runs whose stacks are gone (destroyed, collected) but whose records remain.
A deployed run whose store is out of reach from here (a claim without `--store`, OSS without
credentials) or that no `status`/`wait` ever recorded is counted, not priced, and said so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trainstack.deploy.podrecords import Place, lifetimes, record_of
from trainstack.errors import ToolMissingError, UserError
from trainstack.metrics import cost
from trainstack.metrics.goodput import Ledger
from trainstack.metrics.podledger import ledger
from trainstack.metrics.rollup import Group, Item, roll_up
from trainstack.registry.model import RunKind, RunRecord


@dataclass(frozen=True)
class CostReport:
    groups: list[Group]
    unpriced_deployed: int  # deployed runs whose pod lifetimes could not be read from here
    problems: list[str]  # what could not be read, one line each


def report(
    *,
    by: str,
    since: float,
    team: str | None = None,
    env: str | None = None,
    goodput: bool = False,
    home: Path | None = None,
    mount: Path | None = None,
    backend: str | None = None,
    project: Path | None = None,
) -> CostReport:
    items, unread, problems = _gather(since, home, mount, backend, goodput)
    chosen = [
        i
        for i in items
        if (team is None or team in (i.team, _namespace(i.record)))
        and (env is None or cost.run_env(i.record, None) == env)
    ]
    if env is not None:
        cost.rates_for(project, env)  # an environment named here must exist
    ledger_of = _ledgers(home, project) if goodput else None
    groups = roll_up(chosen, by, project=project, ledger_of=ledger_of)
    return CostReport(groups, unread, problems)


def _gather(
    since: float, home: Path | None, mount: Path | None, backend: str | None, goodput: bool
) -> tuple[list[Item], int, list[str]]:
    from trainstack.registry import Registry, RunFilter, state_home

    with Registry.open(state_home(home)) as reg:
        reg.mark_interrupted()
        records = reg.list(RunFilter(since=since))
    pods, problems = lifetimes(records, mount)
    items = [Item(r, _team(r, pods.get(r.id)), pods.get(r.id)) for r in records]
    known = {r.stack_name for r in records if r.stack_name}
    unread = sum(1 for r in records if r.kind is RunKind.CLUSTER and r.id not in pods)
    shared, missing, more = _shared(known, since, home, mount, backend, goodput)
    return items + shared, unread + missing, problems + more


def _shared(
    known: set[str],
    since: float,
    home: Path | None,
    mount: Path | None,
    backend: str | None,
    goodput: bool,
) -> tuple[list[Item], int, list[str]]:
    """The backend's deployed runs this registry does not hold (a teammate's) with their pod
    lifetimes (with `goodput`, the hang restarts their launchers kept in the store too), how
    many could not be priced from here, and what could not be read."""
    from trainstack.deploy.lookup import deployed
    from trainstack.deploy.recovery import from_store

    try:
        entries = deployed(home=home, backend=backend)
    except ToolMissingError as err:
        return [], 0, [f"the backend's deployed runs were not read: {err.message}"]
    out: list[Item] = []
    missing = 0
    problems: list[str] = []
    for entry in entries:
        if entry.stack in known:
            continue
        place = Place.of_entry(entry, mount)
        try:
            pods = place.read() if place else None
        except UserError as err:
            problems.append(f"{entry.run}: {err.message}")
            pods = None
        if pods is None or place is None:
            missing += 1
            continue
        record = record_of(pods, entry.version, place)
        if record.created_at >= since:
            history = tuple(from_store(entry, mount) or ()) if goodput else None
            out.append(Item(record, entry.team or pods.team, pods, history))
    return out, missing, problems


def _team(record: RunRecord, pods: object) -> str | None:
    from trainstack.metrics.podtimes import PodTimes

    if isinstance(pods, PodTimes) and pods.team:
        return pods.team
    return record.tags.get("team") or _namespace(record)


def _namespace(record: RunRecord) -> str | None:
    """A deployed run's namespace, the middle of its stack's name `<env>.<namespace>.<run>`."""
    parts = (record.stack_name or "").split(".")
    return parts[1] if len(parts) == 3 else None


def _ledgers(home: Path | None, project: Path | None) -> Callable[[Item], Ledger | None]:
    """A run's goodput ledger: a local run's from its run directory, a deployed run's from its
    pods' records; its recovery history from this registry, or the store for a teammate's."""
    from trainstack.registry import Registry, state_home

    def of(item: Item) -> Ledger | None:
        if item.record.run_dir is None and item.pods is None:
            return None
        history = item.history
        if history is None:
            with Registry.open(state_home(home)) as reg:
                history = tuple(reg.restarts(item.record.id))
        return ledger(item.record, history, None, project, item.pods)

    return of
