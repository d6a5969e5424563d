"""team-budget: a run whose projected cost (its job's requests × its timeout, or × its
component's typical duration here) exceeds what remains of its team's budget
(trainstack:teams[].budget, less what this machine's registry says the team spent in the
window) is refused, with the numbers (trainstack.policy.budgets)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.budgets import projection
from trainstack.policy.model import Context, Finding, Level, Resource, Rule


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    p = projection(resource, ctx)
    amount = p.amount if p is not None else None
    if p is None or amount is None or amount <= p.budget.remaining:
        return
    yield Finding(
        "spec",
        f"projected {p.unit(amount)} ({p.basis}) exceeds what remains of team {p.team}'s "
        f"budget: {p.unit(p.budget.remaining)} of {p.unit(p.budget.limit)} per {p.budget.per} "
        f"(spent {p.unit(p.budget.spent)} by {p.budget.runs} run(s) in this machine's registry)",
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
