"""`runs list --metric NAME`: each run's value of one metric, best first (runs without it last)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainstack.metrics import summary
from trainstack.metrics.values import Goal, MetricValue, find
from trainstack.registry.model import RunRecord


@dataclass(frozen=True)
class Ranked:
    record: RunRecord
    value: MetricValue | None


def rank(records: Sequence[RunRecord], metric: str) -> list[Ranked]:
    """Best first; a finished run's summary is kept for the next listing (an older run's: once)."""

    def value(r: RunRecord) -> MetricValue | None:
        if r.run_dir is None:
            return None
        return find(list(summary.of(r.run_dir, keep=r.status.finished)), metric)

    return rank_by(records, value)


def rank_by(
    records: Sequence[RunRecord], value: Callable[[RunRecord], MetricValue | None]
) -> list[Ranked]:
    """`records` by `value` of each, best first, those without one last; a run keeps the
    listing's order among equals (sorted() is stable)."""
    return sorted((Ranked(r, value(r)) for r in records), key=_key)


def has(item: Ranked) -> bool:
    """The run has the metric with a value to rank it by."""
    return item.value is not None and item.value.best is not None


def _key(item: Ranked) -> tuple[int, float]:
    v = item.value
    if v is None or v.best is None:
        return (1, 0.0)
    return (0, v.best if v.goal is Goal.MIN else -v.best)
