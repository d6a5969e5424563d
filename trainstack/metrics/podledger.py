"""A deployed run's goodput ledger (trainstack.metrics.goodput's parts), from what its readers
kept in the artifact store (`pods.json`, trainstack.metrics.podtimes) and its recovery history:

- its wall time: the job's creation → its last pod's end (a deployed run queues before any pod
  holds a node, so its wall time starts earlier than its cost's, which starts at the first pod);
- queue wait: creation → every replica's first pod running (all its containers started);
- start-up: → the first mark: a shipped log written, or a step of the metrics, as readers saw
  them in the store, timed by the files' modification times;
- restarts: each restart in the recovery history (in place, preempted, a JobSet's), and each pod
  recreated in its replica (its end → its successor running), until the step was reached again;
- hang: the launcher's hang restarts (from its records beside the logs), from the pods' hang
  timeout before each until the step was reached again;
- productive: the rest.

Each part is priced by the pods that held resources during it (requests × the time inside the
part, at the environment's rates), so the parts' costs add up to the run's cost from its pods'
lifetimes; the queue wait before any pod is scheduled costs nothing. Idle accelerators are not
known: nothing samples a deployed run's usage.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.metrics import cost, goodput, podtimes
from trainstack.metrics.cost import Rates
from trainstack.metrics.goodput import PARTS, Ledger, Part
from trainstack.metrics.podtimes import PodLife, PodTimes
from trainstack.registry.model import Restart, RunRecord

if TYPE_CHECKING:
    from trainstack.metrics.usage import ReplicaUsage


def ledger(
    record: RunRecord,
    history: Sequence[Restart],
    env: str | None,
    project: Path | None,
    pods: PodTimes | None,
    *,
    usage_series: tuple[ReplicaUsage, ...] | None = None,
) -> Ledger | None:
    """The run's ledger: a deployed run's from its pods' records (`pods`), else a local run's
    (goodput.ledger, from `usage_series` when the caller has read the run's usage); None for a
    run that has not ended or has no records here."""
    if pods is None:
        return goodput.ledger(record, history, env, project, usage_series=usage_series)
    name = cost.run_env(record, env)
    return of_pods(pods, history, cost.rates_for(project, name, strict=env is not None))


def of_pods(pods: PodTimes, history: Sequence[Restart], rates: Rates | None) -> Ledger | None:
    """The ledger of a deployed run that has ended; None while it runs or without pods."""
    end = pods.finished
    if end is None or not pods.pods:
        return None
    first = min(p.scheduled for p in pods.pods)
    start = first if pods.created is None else min(pods.created, first)
    stretches = goodput.segments(
        start,
        end,
        pods.marks,
        podtimes.once([*history, *pods.restarts]),
        max(p.hang_timeout for p in pods.pods),
        queued=max(0.0, all_running(pods, end) - start),
        lost=recreated(pods, end),
    )
    seconds = dict.fromkeys(PARTS, 0.0)
    money = dict.fromkeys(PARTS, 0.0)
    for a, b, part in stretches:
        seconds[part] += b - a
        if rates is not None:
            money[part] += sum(_per_second(p, rates) * _inside(p, a, b) for p in pods.pods)
    return Ledger(
        wall=end - start,
        parts=tuple(Part(n, seconds[n], money[n] if rates else None) for n in PARTS),
        idle_gpu_seconds=0.0,
        idle_cost=None,
        currency=rates.currency if rates else None,
        sampled=False,
    )


def all_running(pods: PodTimes, end: float) -> float:
    """When every replica first had a pod running: per replica its pods' earliest start, the
    latest of those; `end` when a replica's pod was never seen running."""
    firsts: dict[tuple[str, int], float] = {}
    for p in pods.pods:
        began = p.running if p.running is not None else end
        key = (p.role, p.index)
        firsts[key] = min(firsts.get(key, end), began)
    return max(firsts.values(), default=end)


def recreated(pods: PodTimes, end: float) -> list[tuple[float, float]]:
    """(failure, back) for each pod a replica lost and got again: the pod's end (its
    containers' finishedAt, else its successor's scheduling, an upper bound) → the successor
    running (`end` if it never did)."""
    by_replica: dict[tuple[str, int], list[PodLife]] = {}
    for p in sorted(pods.pods, key=lambda p: p.scheduled):
        by_replica.setdefault((p.role, p.index), []).append(p)
    out = []
    for lives in by_replica.values():
        for gone, successor in itertools.pairwise(lives):
            failed = gone.ended if gone.ended is not None else successor.scheduled
            out.append((failed, successor.running if successor.running is not None else end))
    return out


def _per_second(p: PodLife, rates: Rates) -> float:
    hourly = p.cpu * rates.vcpu_hour + p.memory_gib * rates.memory_gib_hour
    return (hourly + p.gpu * rates.gpu_rate()) / 3600


def _inside(p: PodLife, a: float, b: float) -> float:
    return max(0.0, min(b, p.until) - max(a, p.scheduled))
