"""A sweep as typed, frozen values: what leaves spec/sweeploader.py."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainstack.spec.enums import Algorithm as Algorithm
from trainstack.spec.enums import Goal as Goal
from trainstack.spec.enums import Pick as Pick
from trainstack.spec.model import FrozenMap, ParamValue, Run


@dataclass(frozen=True)
class Choice:
    """A list in the spec: the grid's points for this parameter, or a categorical choice."""

    values: tuple[ParamValue, ...]


@dataclass(frozen=True)
class Range:
    """`{min, max, log}` over an Int or Float parameter (random and TPE only)."""

    min: float
    max: float
    log: bool
    integer: bool


Space = Choice | Range


@dataclass(frozen=True)
class Objective:
    metric: str  # `chart/column` or a name that finds one (trainstack.metrics.values.find)
    goal: Goal
    pick: Pick


@dataclass(frozen=True)
class Budget:
    trials: int
    parallel: int
    timeout_seconds: int | None


@dataclass(frozen=True)
class EarlyStopping:
    """optuna's median pruner: stop a trial whose intermediate value is worse than the median of
    earlier trials at the same step, once `startup_trials` have finished and after
    `warmup_steps`."""

    startup_trials: int
    warmup_steps: int


@dataclass(frozen=True)
class Sweep:
    name: str
    experiment: str
    description: str
    tags: FrozenMap[str, str]
    source: Path
    base: Run
    # The base run's document (`metadata` and `spec`, as written) and the directory its relative
    # paths resolve against: each trial's Run file is this with the trial's parameters.
    base_doc: FrozenMap[str, Any]
    base_dir: Path
    # `-p NAME=VALUE` given to `sweep`: parameters fixed for every trial over the base run's
    # (already in `base` and `base_doc`; kept apart to say and fingerprint them).
    fixed: FrozenMap[str, ParamValue]
    space: FrozenMap[str, Space]
    objective: Objective
    algorithm: Algorithm
    seed: int | None
    budget: Budget
    early_stopping: EarlyStopping | None

    @property
    def grid_size(self) -> int:
        size = 1
        for s in self.space.values():
            assert isinstance(s, Choice)
            size *= len(s.values)
        return size

    @property
    def trial_count(self) -> int:
        """How many trials the sweep runs: the budget, and for a grid at most every point."""
        if self.algorithm is Algorithm.GRID:
            return min(self.budget.trials, self.grid_size)
        return self.budget.trials

    def fingerprint(self) -> str:
        """What a resumed sweep must share with the stored study: same space, objective,
        algorithm and -p values (trials of another search are not comparable)."""

        def space(s: Space) -> Any:
            return list(s.values) if isinstance(s, Choice) else [s.min, s.max, s.log, s.integer]

        blob = {
            "space": {k: space(v) for k, v in sorted(self.space.items())},
            "objective": [
                self.objective.metric,
                self.objective.goal.value,
                self.objective.pick.value,
            ],
            "algorithm": self.algorithm.value,
            "component": self.base.component.ref,
        }
        if self.fixed:
            # Only when given: a sweep started without -p keeps its stored fingerprint.
            blob["fixed"] = dict(sorted(self.fixed.items()))
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]
