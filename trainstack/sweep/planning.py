"""`trainstack plan SWEEP.yaml --env ENV`: the run stacks the sweep's first batch would create,
each trial's Run file planned as `trainstack plan RUN.yaml` plans one (offline, under mocks).

The first batch is what a fresh study asks first (`budget.parallel` trials; optuna's sampler in
memory, nothing stored), so the plan shows real parameter values and stack names."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.spec.loader import load_sweep
from trainstack.spec.model import ParamValue
from trainstack.spec.overrides import NONE, Overrides
from trainstack.spec.sweepmodel import Sweep
from trainstack.sweep import study as studies
from trainstack.sweep.trialspec import trial_name, write_trial

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan


@dataclass(frozen=True)
class TrialPlan:
    number: int
    name: str
    stack: str
    params: dict[str, ParamValue]
    plan: Plan


def first_batch(sweep: Sweep) -> list[tuple[int, dict[str, ParamValue]]]:
    import optuna

    studies.quiet()
    sampler = studies.sampler_for(sweep)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    dists = studies.distributions(sweep)
    out = []
    for _ in range(min(sweep.budget.parallel, sweep.trial_count)):
        trial = study.ask(dists)
        out.append((trial.number, dict(trial.params)))
    return out


def plan_sweep(
    path: Path, env: str, project: Path | None, params: Overrides = NONE
) -> list[TrialPlan]:
    """`params`: `-p NAME=VALUE`, fixed for every trial (in each trial's Run file)."""
    from trainstack.plan.service import plan_run

    sweep = load_sweep(path, params=params)
    out = []
    with tempfile.TemporaryDirectory(prefix="trainstack-sweep-plan-") as tmp:
        for number, params in first_batch(sweep):
            spec = write_trial(sweep, Path(tmp), number, params)
            name = trial_name(sweep, number)
            planned = plan_run(spec, env, project)
            out.append(TrialPlan(number, name, planned.stack, params, planned))
    return out
