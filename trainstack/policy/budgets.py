"""Team budgets as the rules see them: each team's budget with what this machine's registry says
it spent in the window (its deployed runs priced from their stores where the caller can read
them), and the run's component's typical duration there. The team-budget rule
(trainstack.policy.rules.budget) projects a run against them; `plan` prints the projection."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.errors import ConfigError
from trainstack.policy.model import Context, TeamBudget

if TYPE_CHECKING:  # plan imports this module; what it reads is imported only with a budget
    from trainstack.metrics.podtimes import Stored
    from trainstack.registry.model import RunRecord

    # Reads deployed runs' pod lifetimes from their artifact stores, as this machine can.
    StoreReader = Callable[[Sequence[RunRecord]], Stored]


def with_budgets(
    ctx: Context,
    values: Mapping[str, Any],
    component: str | None,
    source: str,
    stores: StoreReader | None = None,
) -> Context:
    """`ctx` with each budgeted team's budget and spending, read from this machine's registry
    (none yet: nothing spent), and the component's typical duration. `stores`: reads the
    deployed runs' pod lifetimes from their stores (trainstack.deploy.podrecords.stored, given
    by the caller: policy sits below deploy); None: no store is read."""
    budgets = _configured(values, source)
    if not budgets:
        return ctx
    from trainstack.infra.platform.config_budget import AMOUNT
    from trainstack.metrics.cost import parse_rates
    from trainstack.metrics.spending import team_spent, typical_seconds

    raw_rates = values.get(f"{names.PLATFORM_PROJECT}:costs")
    rates = None if raw_rates is None else parse_rates(raw_rates, ctx.env, source)
    records = _records()
    stored = stores(records) if stores is not None and budgets else None
    out: dict[str, TeamBudget] = {}
    for team, b in budgets.items():
        money = b.unit == AMOUNT
        if money and rates is None:  # as the platform's config check says it
            raise ConfigError(
                f"{source}: {names.PLATFORM_PROJECT}:teams: team {team}'s budget.amount: a budget "
                f"in money needs {names.PLATFORM_PROJECT}:costs (the rates that price a run)",
                hint="set trainstack:costs, or give the budget in gpuHours",
            )
        spent = team_spent(
            records,
            env=ctx.env,
            namespace=ctx.namespaces.get(team, team),
            since=time.time() - b.seconds,
            rates=rates if money else None,
            stored=stored,
        )
        gpu = rates.gpu_rate() if rates else 0.0
        out[team] = TeamBudget(
            limit=b.limit,
            unit=b.unit,
            per=b.per,
            spent=spent.amount,
            runs=spent.runs,
            unpriced=spent.unpriced,
            why_unpriced=spent.why_unpriced,
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
    from trainstack.registry.dbfile import check_existing

    home = state_home()
    if not check_existing(home):
        return []
    with Registry.open(home) as reg:
        return reg.list()
