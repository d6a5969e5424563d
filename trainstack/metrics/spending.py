"""What a team has spent in a window and how long a component's runs take, from this machine's
run registry: the figures a team budget is checked against (trainstack.policy.budgets).

A team's runs are the deployed runs whose stack is `<env>.<team's namespace>.<run>`. Their cost
is their recorded resource-time (trainstack.metrics.cost): a deployed run's from its pod
lifetimes in the artifact store (trainstack.metrics.podtimes), where the caller could read them
from this machine. A run without one is counted as unpriced, with why, so the figure is a lower
bound and says so; nothing is guessed."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from trainstack.metrics.cost import Rates, price, resource_time
from trainstack.metrics.podtimes import Stored
from trainstack.registry.model import RunKind, RunRecord

# Why a deployed run is unpriced where its store was not read, or had nothing for it.
NOT_READ = "this check read no artifact store"
NOT_RECORDED = "its pod lifetimes were not read"

# How many of a component's latest runs its typical duration is the median of.
RECENT_RUNS = 20


@dataclass(frozen=True)
class Spent:
    amount: float  # GPU-hours, or money at `rates`
    runs: int  # the team's runs in the window on this machine
    unpriced: int  # of them, those with no record of what they cost
    why_unpriced: str = ""  # why, in words, for the deployed ones ("" when none)


def team_spent(
    records: Sequence[RunRecord],
    *,
    env: str,
    namespace: str,
    since: float,
    rates: Rates | None,
    stored: Stored | None = None,
) -> Spent:
    """Spent by the team's runs created at or after `since`: money when `rates` is given,
    else GPU-hours. `stored`: deployed runs' pod lifetimes as read from their stores (None:
    no store was read)."""
    prefix = f"{env}.{namespace}."
    amount, runs, unpriced = 0.0, 0, 0
    why: Counter[str] = Counter()
    for r in records:
        if not (r.stack_name or "").startswith(prefix) or r.created_at < since:
            continue
        runs += 1
        rt = resource_time(r, stored.found.get(r.id) if stored else None)
        if rt is None:
            unpriced += 1
            if r.kind is RunKind.CLUSTER:
                why[stored.unread.get(r.id, NOT_RECORDED) if stored else NOT_READ] += 1
        elif rates is not None:
            amount += price(rt, rates)
        else:
            amount += rt.gpu_seconds / 3600
    return Spent(amount, runs, unpriced, _said(why))


def _said(why: Counter[str]) -> str:
    """Why deployed runs were not priced: "2 deployed run(s) not priced: <why>; 1: <why>"."""
    parts = [f"{n}: {reason}" for reason, n in sorted(why.items(), key=lambda i: (-i[1], i[0]))]
    if not parts:
        return ""
    first = parts[0].partition(": ")
    return "; ".join([f"{first[0]} deployed run(s) not priced: {first[2]}", *parts[1:]])


def typical_seconds(records: Sequence[RunRecord], component: str) -> tuple[float, int] | None:
    """The median duration of the component's latest finished runs, and how many it is of."""
    took = [
        r.duration
        for r in sorted(records, key=lambda r: r.created_at, reverse=True)
        if r.component == component and r.duration is not None and r.status.finished
    ][:RECENT_RUNS]
    return (statistics.median(took), len(took)) if took else None
