"""What `trainstack metrics` shows of each series, as a table (laid out by trainstack.texttable),
and one value as `runs show` and comparisons word it."""

from __future__ import annotations

from collections.abc import Sequence

from trainstack.metrics.values import MetricValue, number
from trainstack.texttable import plain, table


def values_table(found: Sequence[MetricValue]) -> str:
    rows = []
    for v in found:
        rows.append(
            (
                v.id,
                number(v.last),
                number(v.last_x),
                number(v.best),
                number(v.best_x),
                str(v.goal) if v.goal else "-",
                str(v.points),
            )
        )
    return plain(table(("metric", "last", "at", "best", "at", "goal", "points"), rows))


def value_text(v: MetricValue) -> str:
    """'0.953 (best 0.961 at 4, max)' for `runs show` and comparisons."""
    if v.goal is None:  # no best without a goal (metrics.json `goals` declares one)
        return number(v.last)
    return f"{number(v.last)} (best {number(v.best)} at {number(v.best_x)}, {v.goal})"
