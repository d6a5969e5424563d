"""The last and best value of each series, and finding a metric by the name a user types.

A metric is `chart/column` (`epoch/accuracy`); a column name that only one chart has, or the name
of a one-column chart, names it too. "Best" follows the series' goal: the one metrics.json
declares (`goals`), else the minimum for names that read as a cost (loss, error, time, …) and the
maximum for names that read as a score (accuracy, F1, AUC, …); a series whose goal is neither
declared nor readable from its name (a gradient norm, a learning rate) has no best.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass

import numpy as np

from trainstack.errors import UserError
from trainstack.metrics.series import ChartData, Metrics
from trainstack.metrics.spec import Axis
from trainstack.suggest import did_you_mean

_LOWER_IS_BETTER = re.compile(
    r"(?i)(loss|err|mse|mae|rmse|perplexity|ppl|wer|cer|time|latency|seconds|duration)"
)
_HIGHER_IS_BETTER = re.compile(
    r"(?i)(acc|accuracy|auc|f1|precision|recall|bleu|rouge|iou|map|ndcg|reward|score|r2)"
)


class Goal(enum.StrEnum):
    MIN = "min"
    MAX = "max"


@dataclass(frozen=True)
class MetricValue:
    chart: str
    column: str
    goal: Goal | None  # None: no best (the goal is neither declared nor readable from the name)
    points: int
    last: float | None
    last_x: float | None
    best: float | None
    best_x: float | None

    @property
    def id(self) -> str:
        return f"{self.chart}/{self.column}"


def goal_of(chart: str, column: str, axis: str, declared: str | None = None) -> Goal | None:
    if declared is not None:
        return Goal(declared)
    for name in (column, axis, chart):
        if _LOWER_IS_BETTER.search(name):
            return Goal.MIN
        if _HIGHER_IS_BETTER.search(name):
            return Goal.MAX
    return None


def values(metrics: Metrics) -> list[MetricValue]:
    return [v for data in metrics.charts for v in chart_values(data)]


def chart_values(data: ChartData) -> list[MetricValue]:
    out = []
    chart = data.chart
    for col in data.columns:
        axis = chart.ys[1] if col.axis is Axis.RIGHT else chart.ys[0]
        goal = goal_of(chart.name, col.name, axis, chart.goals.get(col.name))
        known = np.flatnonzero(~np.isnan(col.values))
        if known.size == 0:
            out.append(MetricValue(chart.name, col.name, goal, 0, None, None, None, None))
            continue
        last = int(known[-1])
        # NaN, ±inf (a diverged loss prints inf) are values, shown as such, but never "best".
        finite = known[np.isfinite(col.values[known])]
        if finite.size == 0 or goal is None:
            out.append(
                MetricValue(
                    chart.name,
                    col.name,
                    goal,
                    int(known.size),
                    float(col.values[last]),
                    float(data.x[last]),
                    None,
                    None,
                )
            )
            continue
        vals = col.values[finite]
        best = int(finite[int(np.argmin(vals) if goal is Goal.MIN else np.argmax(vals))])
        out.append(
            MetricValue(
                chart.name,
                col.name,
                goal,
                int(known.size),
                float(col.values[last]),
                float(data.x[last]),
                float(col.values[best]),
                float(data.x[best]),
            )
        )
    return out


def find(found: list[MetricValue], name: str) -> MetricValue | None:
    """The metric `name` names among `found`, or None when this run does not have it."""
    for v in found:
        if v.id == name:
            return v
    by_column = [v for v in found if v.column == name]
    if len(by_column) == 1:
        return by_column[0]
    by_chart = [v for v in found if v.chart == name]
    if len(by_chart) == 1:
        return by_chart[0]
    return None


def require(found: list[MetricValue], name: str, run: str) -> MetricValue:
    hit = find(found, name)
    if hit is None:
        ids = [v.id for v in found]
        raise UserError(
            f"run {run} has no metric {name!r}.{did_you_mean(name, ids)}",
            hint="its metrics: " + (", ".join(ids) if ids else "none"),
        )
    return hit


def number(value: float | None) -> str:
    """Compact and stable: 4 significant digits, '-' for none, 'inf' and '-inf' as such."""
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) < 1e9 and value == int(value):
        return str(int(value))
    return f"{value:.4g}"
