"""`runs list --metric NAME`: each run's value of one metric, best first (runs without it last)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainstack.metrics import summary
from trainstack.metrics.values import Goal, MetricValue, find
from trainstack.registry.model import RunRecord


@dataclass(frozen=True)
class Ranked:
    record: RunRecord
    value: MetricValue | None


def rank(records: Sequence[RunRecord], metric: str, *, keep: bool = True) -> list[Ranked]:
    """Best first. `keep`: a finished run's missing summary is written for the next listing
    (an older run's: once); the console, which writes nothing, computes it in memory."""
    found = []
    for r in records:
        hit = None
        if r.run_dir is not None:
            hit = find(list(summary.of(r.run_dir, keep=keep and r.status.finished)), metric)
        found.append(Ranked(r, hit))
    # A run keeps the listing's order among equals (sorted() is stable).
    return sorted(found, key=_key)


def has(item: Ranked) -> bool:
    """The run has the metric with a value to rank it by."""
    return item.value is not None and item.value.best is not None


def _key(item: Ranked) -> tuple[int, float]:
    v = item.value
    if v is None or v.best is None:
        return (1, 0.0)
    return (0, v.best if v.goal is Goal.MIN else -v.best)
