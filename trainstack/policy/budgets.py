"""Team budgets as the rules see them: each team's budget with what this machine's registry says
it spent in the window, and a run's projected cost — its job's requests × its timeout
(`activeDeadlineSeconds`), or × the median duration of its component's recent runs in this
registry when it has none. `plan` prints the projection; the team-budget rule refuses a run
whose projection exceeds what remains."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from trainstack import platformnames as names
from trainstack.humanize import human_seconds
from trainstack.policy.model import Context, Resource, TeamBudget
from trainstack.policy.pods import Requests, pod_requests, pod_templates


@dataclass(frozen=True)
class Projection:
    team: str
    budget: TeamBudget
    requests: Requests
    seconds: float | None  # None: no timeout, and no runs of its component here
    basis: str  # where `seconds` comes from, in words

    @property
    def amount(self) -> float | None:
        if self.seconds is None:
            return None
        b, r = self.budget, self.requests
        if b.currency is None:
            return r.gpus * self.seconds / 3600
        per_hour = r.cpu * b.vcpu_hour + r.memory / 2**30 * b.memory_gib_hour + r.gpus * b.gpu_hour
        return per_hour * self.seconds / 3600

    def unit(self, value: float) -> str:
        c = self.budget.currency
        return f"{value:.2f} GPU-h" if c is None else f"{c} {value:.2f}"

    def line(self) -> str:
        """`plan`'s words: the projection against what remains, with where each comes from."""
        b = self.budget
        here = f"spent {self.unit(b.spent)} by {b.runs} run(s) in this machine's registry" + (
            f", {b.unpriced} of them with no record of their cost" if b.unpriced else ""
        )
        remaining = f"{self.unit(b.remaining)} of {self.unit(b.limit)} per {b.per} remain ({here})"
        amount = self.amount
        if amount is None:
            return f"budget: team {self.team}: not projected ({self.basis}); {remaining}"
        return (
            f"budget: team {self.team}: projected {self.unit(amount)} ({self.basis}); {remaining}"
        )


def projection(resource: Resource, ctx: Context) -> Projection | None:
    """The projection of a job resource whose team has a budget; None for anything else."""
    pods = list(pod_templates(resource.props))
    team = ctx.team_of(pods[0].namespace) if pods else None
    budget = ctx.budgets.get(team) if team else None
    if team is None or budget is None:
        return None
    total = Requests(0.0, 0.0, 0)
    for pod in pods:
        total = total + pod_requests(pod.spec, ctx.defaults_of(pod.namespace)).times(pod.replicas)
    spec = resource.props.get("spec") or {}
    deadline = spec.get("activeDeadlineSeconds") or (spec.get("runPolicy") or {}).get(
        "activeDeadlineSeconds"
    )
    if isinstance(deadline, int | float) and not isinstance(deadline, bool) and deadline > 0:
        return Projection(
            team,
            budget,
            total,
            float(deadline),
            f"requests × its timeout, {human_seconds(float(deadline))}",
        )
    if ctx.typical_seconds is not None:
        took, n = ctx.typical_seconds
        basis = f"requests × {human_seconds(took)}, the median of its component's {n} run(s) here"
        return Projection(team, budget, total, took, basis)
    return Projection(
        team, budget, total, None, "no timeout, and no runs of its component here: set spec.timeout"
    )


def with_budgets(
    ctx: Context, values: Mapping[str, Any], component: str | None, source: str
) -> Context:
    """`ctx` with each budgeted team's budget and spending, read from this machine's registry
    (none yet: nothing spent), and the component's typical duration."""
    budgets = _configured(values, source)
    if not budgets:
        return ctx
    from trainstack.metrics.cost import parse_rates
    from trainstack.metrics.spending import team_spent, typical_seconds

    raw_rates = values.get(f"{names.PLATFORM_PROJECT}:costs")
    rates = None if raw_rates is None else parse_rates(raw_rates, ctx.env, source)
    records = _records()
    out: dict[str, TeamBudget] = {}
    for team, b in budgets.items():
        money = b.unit == "amount"
        spent = team_spent(
            records,
            env=ctx.env,
            namespace=ctx.namespaces.get(team, team),
            since=time.time() - b.seconds,
            rates=rates if money else None,
        )
        gpu = rates.gpu_rate() if rates else 0.0
        out[team] = TeamBudget(
            limit=b.limit,
            unit=b.unit,
            per=b.per,
            spent=spent.amount,
            runs=spent.runs,
            unpriced=spent.unpriced,
            currency=rates.currency if money and rates else None,
            vcpu_hour=rates.vcpu_hour if money and rates else 0.0,
            memory_gib_hour=rates.memory_gib_hour if money and rates else 0.0,
            gpu_hour=gpu if money else 0.0,
        )
    typical = typical_seconds(records, component) if component else None
    return replace(ctx, budgets=out, typical_seconds=typical)


def _configured(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    from trainstack.infra.configread import Section
    from trainstack.infra.platform.config_budget import load_budget

    raw = values.get(f"{names.PLATFORM_PROJECT}:teams") or []
    if isinstance(raw, str):
        raw = json.loads(raw)
    out = {}
    for i, team in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(team, dict) and team.get("name") and "budget" in team:
            where = Section(team, f"{names.PLATFORM_PROJECT}:teams[{i}].", source)
            out[str(team["name"])] = load_budget(where)
    return out


def _records() -> list[Any]:
    from trainstack.registry import Registry, state_home
    from trainstack.registry.store import check_existing

    home = state_home()
    if not check_existing(home):
        return []
    with Registry.open(home) as reg:
        return reg.list()
