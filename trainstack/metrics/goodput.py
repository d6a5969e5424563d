"""A run's goodput ledger: its wall time (started → finished, the time `cost` prices) split into
parts that add up to it, each priced at the run's rate per second of wall time:

- queue wait: created → all replicas running (zero for a local run: nothing queues it);
- start-up: replicas running → the first output in a log or the first step of the metrics;
- restarts: a replica's failure → the metrics reaching again the step they had reached when it
  failed (recomputing what the last checkpoint did not keep, and starting again);
- hang: for a hang restart, the hang timeout's silent window before the launcher restarted the
  replica, and from the restart until the step was reached again;
- productive: the rest.

Where spans overlap, an instant counts once, for the first of hang, restarts, start-up in that
order. Idle accelerators (GPUs below the idle threshold, the idle warnings' stretches) are not a
part: a GPU idles while the run trains on its others, so their GPU-seconds are shown beside the
ledger, priced at the GPU rate, as a share of what the parts hold, never subtracted.

Times come from the run's own records: the registry (start, end, the recovery history), the
progress clock (trainstack.metrics.progress, one look a usage sample), the hang timeout in its
training_job.json, and usage.jsonl. So each boundary is known to within a sample (a second).
A deployed run's ledger is trainstack.metrics.podledger's, from the records its readers kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.contract.rundir import RunDir
from trainstack.errors import UserError
from trainstack.metrics import cost, progress
from trainstack.metrics.progress import Mark
from trainstack.recovery import HUNG
from trainstack.registry.model import Restart, RunRecord

if TYPE_CHECKING:
    from trainstack.metrics.usage import ReplicaUsage

QUEUE = "queue"
STARTUP = "start-up"
PRODUCTIVE = "productive"
RESTARTS = "restarts"
HANG = "hang"
PARTS = (QUEUE, STARTUP, PRODUCTIVE, RESTARTS, HANG)
# Which part an instant belongs to where spans overlap: the first listed.
_PRECEDENCE = (HANG, RESTARTS, STARTUP, QUEUE)
_BAR = {QUEUE: ".", STARTUP: "s", PRODUCTIVE: "#", RESTARTS: "r", HANG: "h"}


@dataclass(frozen=True)
class Part:
    name: str
    seconds: float
    cost: float | None  # None: the environment sets no rates


@dataclass(frozen=True)
class Ledger:
    wall: float
    parts: tuple[Part, ...]  # in PARTS order; their seconds add up to `wall`
    idle_gpu_seconds: float
    idle_cost: float | None
    currency: str | None
    sampled: bool = True  # False: nothing sampled usage (a deployed run), so no idle figure

    def seconds(self, name: str) -> float:
        return next(p.seconds for p in self.parts if p.name == name)

    def bar(self, width: int = 40) -> str:
        """The parts as a bar of `width` characters, each part's share rounded (largest
        remainders), so a part of any length shows as long as it earns a character."""
        if self.wall <= 0:
            return "[" + " " * width + "]"
        exact = [p.seconds / self.wall * width for p in self.parts]
        cells = [int(x) for x in exact]
        by_remainder = sorted(range(len(exact)), key=lambda i: cells[i] - exact[i])
        for i in by_remainder[: width - sum(cells)]:
            cells[i] += 1
        return "[" + "".join(_BAR[p.name] * n for p, n in zip(self.parts, cells, strict=True)) + "]"

    def lines(self) -> list[str]:
        """`runs show`'s and the report's words: the bar with its key, then each part."""
        key = " ".join(f"{_BAR[p.name]}={p.name}" for p in self.parts)
        out = [f"{self.bar()}  {key}"]
        for p in self.parts:
            share = p.seconds / self.wall if self.wall > 0 else 0.0
            out.append(f"{p.name}: {p.seconds:.1f}s ({share:.0%}){self._money(p.cost)}")
        if not self.sampled:
            out.append("idle accelerators: not known (nothing samples a deployed run's usage)")
            return out
        out.append(
            f"idle accelerators: {self.idle_gpu_seconds:.1f} GPU-s{self._money(self.idle_cost)}"
            " (within the parts above, not added to them)"
        )
        return out

    def _money(self, amount: float | None) -> str:
        return "" if amount is None or self.currency is None else f", {self.currency} {amount:.4f}"

    def to_json(self) -> dict[str, object]:
        return {
            "wall_seconds": self.wall,
            "currency": self.currency,
            "parts": [{"part": p.name, "seconds": p.seconds, "cost": p.cost} for p in self.parts],
            "idle_accelerators": (
                {"gpu_seconds": self.idle_gpu_seconds, "cost": self.idle_cost}
                if self.sampled
                else None
            ),
        }


def split(
    start: float,
    end: float,
    marks: Sequence[Mark],
    history: Sequence[Restart],
    hang_window: float,
    queued: float = 0.0,
) -> dict[str, float]:
    """Seconds of [start, end] per part; `queued`: how long after `start` replicas were all
    running (counted from `start`: the wall time begins when the run was created)."""
    out = dict.fromkeys(PARTS, 0.0)
    for a, b, label in segments(start, end, marks, history, hang_window, queued):
        out[label] += b - a
    return out


def segments(
    start: float,
    end: float,
    marks: Sequence[Mark],
    history: Sequence[Restart],
    hang_window: float,
    queued: float = 0.0,
    lost: Sequence[tuple[float, float]] = (),
) -> list[tuple[float, float, str]]:
    """[start, end] cut into consecutive (from, to, part) stretches. `lost`: more (failure,
    back) spans counted as restarts until `back` or the step reached again, whichever is later
    (a deployed replica's pod recreated: back when its successor ran)."""
    spans: list[tuple[float, float, str]] = [(start, start + queued, QUEUE)]
    first = marks[0].t if marks else end
    spans.append((start + queued, first, STARTUP))
    for r in history:
        again = _reached_again(marks, r.at)
        if r.reason == HUNG:
            spans.append((r.at - hang_window, again, HANG))
        else:
            spans.append((r.at, again, RESTARTS))
    for failed, back in lost:
        spans.append((failed, max(back, _reached_again(marks, failed)), RESTARTS))
    cuts = sorted({start, end, *(min(max(t, start), end) for s in spans for t in s[:2])})
    out = []
    for a, b in itertools.pairwise(cuts):
        mid = (a + b) / 2
        inside = {name for s, e, name in spans if s <= mid < e}
        out.append((a, b, next((name for name in _PRECEDENCE if name in inside), PRODUCTIVE)))
    return out


def _reached_again(marks: Sequence[Mark], failed: float) -> float:
    """When the metrics reached again the step they were at when a replica failed at `failed`;
    the failure itself when no step was known by then (nothing says what was redone); the run's
    end (infinity, clipped) when they never did."""
    before = [m.step for m in marks if m.t <= failed and m.step is not None]
    if not before:
        return failed
    reached = before[-1]
    return next(
        (m.t for m in marks if m.t > failed and m.step is not None and m.step >= reached),
        float("inf"),
    )


def ledger(
    record: RunRecord,
    history: Sequence[Restart],
    env: str | None,
    project: Path | None,
    *,
    usage_series: tuple[ReplicaUsage, ...] | None = None,
) -> Ledger | None:
    """The ledger of a finished local run; None for one that has not ended or has no run
    directory on this machine. `usage_series`: its usage.jsonl, when the caller has read it."""
    if record.run_dir is None or record.started_at is None or record.finished_at is None:
        return None
    root = record.run_dir
    marks = progress.read(RunDir(root).progress, root=root)
    seconds = split(
        record.started_at, record.finished_at, marks, history, _hang_window(root), queued=0.0
    )
    rt = cost.resource_time(record, usage_series=usage_series)
    name = cost.run_env(record, env)
    rates = cost.rates_for(project, name, strict=env is not None) if name else None
    per_second = cost.price(rt, rates) / rt.seconds if rt and rates and rt.seconds > 0 else None
    idle = _idle_gpu_seconds(root, usage_series)
    return Ledger(
        wall=record.finished_at - record.started_at,
        parts=tuple(
            Part(n, s, None if per_second is None else s * per_second) for n, s in seconds.items()
        ),
        idle_gpu_seconds=idle,
        idle_cost=idle / 3600 * rates.gpu_rate() if rates else None,
        currency=rates.currency if rates else None,
    )


def _hang_window(root: Path) -> float:
    from trainstack.metrics.runview import training_job

    ft = training_job(root).get("faultTolerance")
    value = ft.get("hangTimeoutSeconds") if isinstance(ft, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _idle_gpu_seconds(root: Path, found: tuple[ReplicaUsage, ...] | None) -> float:
    from trainstack.metrics import usage
    from trainstack.metrics.idle import IdleThresholds, detect_in

    if found is None:
        try:
            found = usage.read(RunDir(root).usage, root=root)
        except UserError:
            return 0.0
    warnings = detect_in(found, IdleThresholds.from_env())
    return sum(w.seconds for w in warnings if w.resource.startswith("GPU"))
