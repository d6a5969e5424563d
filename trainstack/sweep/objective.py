"""A trial's objective: one metric series from the run's `$METRICS` (docs/metrics.md), read
through trainstack.metrics. Locally that is the run directory's `metrics/`; for a run stack it is
the copy in the artifact store, reached through sweep/cluster.py's `MetricsSource`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.spec.sweepmodel import Goal, Objective, Pick

if TYPE_CHECKING:
    from trainstack.metrics.series import Metrics


@dataclass(frozen=True)
class Series:
    steps: tuple[tuple[int, float], ...]  # (x as an integer step, value), gaps left out
    value: float | None  # the trial's score: the last or best value
    # The first (step, value) that is ±inf (a diverged loss): such a trial has no score, it failed.
    diverged: tuple[int, float] | None = None


@dataclass(frozen=True)
class Missing:
    """The metric is not in the run's metrics; `known` lists what is. `unread`: why the series
    file that declares it could not be read (a cell that is not a number), when that is why."""

    known: tuple[str, ...]
    unread: tuple[str, ...] = ()


def read_series(metrics_dir: Path, objective: Objective) -> Series | Missing:
    from trainstack.metrics import series as metric_series
    from trainstack.metrics import values

    if not (metrics_dir / "metrics.json").is_file():
        return Missing(())
    # The run directory (or the artifact store's copy of it) is the folder holding $METRICS.
    metrics = metric_series.read(metrics_dir, root=metrics_dir.parent)
    found = values.values(metrics)
    hit = values.find(found, objective.metric)
    if hit is None:
        return Missing(tuple(v.id for v in found), _unread(metrics, metrics_dir, objective.metric))
    data = metrics.chart(hit.chart)
    assert data is not None
    column = next(c for c in data.columns if c.name == hit.column)
    steps = tuple(
        (int(x), float(y))
        for x, y in zip(data.x, column.values, strict=True)
        # x must be a step optuna can take; a NaN value is a gap, an infinite one is kept
        if math.isfinite(float(x)) and abs(float(x)) < 2**63 and not math.isnan(float(y))
    )
    diverged = next(((x, y) for x, y in steps if not math.isfinite(y)), None)
    if diverged is not None:
        return Series(steps, None, diverged)
    return Series(steps, score(steps, objective))


def _unread(metrics: Metrics, metrics_dir: Path, metric: str) -> tuple[str, ...]:
    """The problems of the series file of a chart declaring `metric` that could not be read (its
    values are then in no chart, and the metric looks merely misnamed)."""
    from trainstack.excerpt import printable

    for chart in metrics.spec.charts:
        names = {chart.name, *chart.ys, *(f"{chart.name}/{y}" for y in chart.ys)}
        if metric in names and metrics.chart(chart.name) is None:
            file = str(metrics_dir / chart.file_name)
            return tuple(printable(p.render()) for p in metrics.problems if p.file == file)
    return ()


def score(steps: tuple[tuple[int, float], ...], objective: Objective) -> float | None:
    ys = [y for _, y in steps if math.isfinite(y)]
    if not ys:
        return None
    if objective.pick is Pick.LAST:
        return ys[-1]
    return min(ys) if objective.goal is Goal.MINIMIZE else max(ys)
