"""What `trainstack sweeps list|show` read: each sweep's optuna storage under the state home."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainstack.errors import NotFoundError, UserError
from trainstack.metrics.values import number
from trainstack.spec.sweepmodel import Goal
from trainstack.suggest import did_you_mean
from trainstack.sweep import study as studies
from trainstack.sweep.engine import rows
from trainstack.sweep.summary import HISTORY_PNG, best
from trainstack.sweep.view import TrialRow
from trainstack.texttable import Table, table


@dataclass(frozen=True)
class SweepInfo:
    name: str
    directory: Path
    goal: Goal
    objective: str
    experiment: str
    spec: str
    trials: tuple[TrialRow, ...]

    @property
    def best(self) -> TrialRow | None:
        return best(list(self.trials), self.goal)

    @property
    def counts(self) -> dict[str, int]:
        """How many trials are in each state, in the order first met."""
        out: dict[str, int] = {}
        for r in self.trials:
            out[r.state.value] = out.get(r.state.value, 0) + 1
        return out

    @property
    def history(self) -> Path | None:
        png = self.directory / HISTORY_PNG
        return png if png.is_file() else None


def listing(found: list[SweepInfo]) -> Table:
    """`sweeps list`'s table: one sweep a row."""
    rows = []
    for s in found:
        top = s.best
        rows.append(
            (
                s.name,
                s.experiment,
                f"{s.goal.value} {s.objective}",
                ", ".join(f"{n} {k}" for k, n in s.counts.items()),
                number(top.value) if top else "-",
                top.run_id or top.name if top else "-",
            )
        )
    return table(("sweep", "experiment", "objective", "trials", "best", "best trial"), rows)


def names(home: Path) -> list[str]:
    root = studies.sweeps_root(home)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / studies.STORAGE_FILE).is_file())


def info(home: Path, name: str) -> SweepInfo:
    known = names(home)
    if name not in known:
        raise NotFoundError(
            f"no sweep {name!r} in {studies.sweeps_root(home)}.{did_you_mean(name, known)}",
            hint="`trainstack sweeps list` shows the sweeps recorded here",
        )
    import optuna

    directory = studies.sweep_dir(home, name)
    studies.quiet()
    try:
        if not studies.check_storage(directory):  # empty: optuna would write its tables into it
            raise KeyError(name)
        study = optuna.load_study(study_name=name, storage=studies.storage_url(directory))
    except KeyError:  # optuna's "Record does not exist.": the storage holds no study by that name
        raise UserError(
            f"{directory / studies.STORAGE_FILE}: holds no sweep named {name!r} "
            "(a sweep interrupted before its first trial, or a folder renamed)",
            hint=f"run the sweep again to start it, or remove {directory}",
        ) from None
    goal = (
        Goal.MINIMIZE if study.direction is optuna.study.StudyDirection.MINIMIZE else Goal.MAXIMIZE
    )
    attrs = study.user_attrs
    return SweepInfo(
        name,
        directory,
        goal,
        str(attrs.get("objective", "")),
        str(attrs.get("experiment", "")),
        str(attrs.get(studies.SPEC, "")),
        tuple(rows(study)),
    )
