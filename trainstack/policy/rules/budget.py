"""team-budget: a run whose projected cost (its job's requests × its timeout, or × its
component's typical duration here) exceeds what remains of its team's budget
(trainstack:teams[].budget, less what this machine's registry says the team spent in the
window) is refused, with the numbers. `plan` prints each projection (Projection.line).

The budgets and spending come with the context (trainstack.policy.budgets)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.humanize import human_seconds
from trainstack.policy.model import Context, Finding, Level, Resource, Rule, TeamBudget
from trainstack.policy.pods import Requests, pod_templates
from trainstack.policy.rules.quota import job_requests


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

    @property
    def spent(self) -> str:
        """What the team spent, where that comes from, and what it could not price and why."""
        b = self.budget
        return (
            f"spent {self.unit(b.spent)} by {b.runs} run(s) in this machine's registry"
            + (f", {b.unpriced} of them with no record of their cost" if b.unpriced else "")
            + (f" ({b.why_unpriced})" if b.why_unpriced else "")
        )

    def line(self) -> str:
        """`plan`'s words: the projection against what remains, with where each comes from."""
        b = self.budget
        remaining = (
            f"{self.unit(b.remaining)} of {self.unit(b.limit)} per {b.per} remain ({self.spent})"
        )
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
    total = job_requests(resource, ctx).requests
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


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    p = projection(resource, ctx)
    amount = p.amount if p is not None else None
    if p is None or amount is None or amount <= p.budget.remaining:
        return
    yield Finding(
        "spec",
        f"projected {p.unit(amount)} ({p.basis}) exceeds what remains of team {p.team}'s "
        f"budget: {p.unit(p.budget.remaining)} of {p.unit(p.budget.limit)} per {p.budget.per} "
        f"({p.spent})",
        f"shorten spec.timeout or use fewer GPUs, or raise the team's budget "
        f"(trainstack:teams[].budget in Pulumi.{ctx.env}.yaml)",
    )


RULE = Rule(
    id="team-budget",
    description="A run's projected cost fits what remains of its team's budget.",
    level=Level.MANDATORY,
    defaults={},
    check=check,
    types=("kubernetes:",),
)
