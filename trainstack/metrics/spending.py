"""What a team has spent in a window and how long a component's runs take, from this machine's
run registry: the figures a team budget is checked against (trainstack.policy.budgets).

A team's runs are the deployed runs whose stack is `<env>.<team's namespace>.<run>`. Their cost
is their recorded resource-time (trainstack.metrics.cost); a run without one is counted as
unpriced, so the figure is a lower bound and says so. A deployed run is one: its pod lifetimes
are in the artifact store (trainstack.metrics.podtimes), which a policy check, run offline, does
not read (`trainstack cost` does)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from trainstack.metrics.cost import Rates, price, resource_time
from trainstack.registry.model import RunRecord

# How many of a component's latest runs its typical duration is the median of.
RECENT_RUNS = 20


@dataclass(frozen=True)
class Spent:
    amount: float  # GPU-hours, or money at `rates`
    runs: int  # the team's runs in the window on this machine
    unpriced: int  # of them, those with no record of what they cost


def team_spent(
    records: Sequence[RunRecord],
    *,
    env: str,
    namespace: str,
    since: float,
    rates: Rates | None,
) -> Spent:
    """Spent by the team's runs created at or after `since`: money when `rates` is given,
    else GPU-hours."""
    prefix = f"{env}.{namespace}."
    amount, runs, unpriced = 0.0, 0, 0
    for r in records:
        if not (r.stack_name or "").startswith(prefix) or r.created_at < since:
            continue
        runs += 1
        rt = resource_time(r)
        if rt is None:
            unpriced += 1
        elif rates is not None:
            amount += price(rt, rates)
        else:
            amount += rt.gpu_seconds / 3600
    return Spent(amount, runs, unpriced)


def typical_seconds(records: Sequence[RunRecord], component: str) -> tuple[float, int] | None:
    """The median duration of the component's latest finished runs, and how many it is of."""
    took = [
        r.duration
        for r in sorted(records, key=lambda r: r.created_at, reverse=True)
        if r.component == component and r.duration is not None and r.status.finished
    ][:RECENT_RUNS]
    return (statistics.median(took), len(took)) if took else None
