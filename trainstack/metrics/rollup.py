"""`trainstack cost`'s figures: runs' resource-time and cost (trainstack.metrics.cost), and with
`--goodput` their goodput ledgers' parts (trainstack.metrics.goodput), summed per team,
experiment, component or run. Each run is priced at its own environment's rates; a group whose
runs are priced in several currencies says so rather than adding them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainstack import texttable
from trainstack.metrics import cost
from trainstack.metrics.goodput import PARTS, Ledger
from trainstack.metrics.podtimes import PodTimes
from trainstack.registry.model import Restart, RunRecord

BY = ("team", "experiment", "component", "run")
NONE = "-"  # the group of runs without a team (or experiment)


@dataclass(frozen=True)
class Item:
    """One run as the roll-up sees it: its record, its team, and a deployed run's pods."""

    record: RunRecord
    team: str | None
    pods: PodTimes | None = None
    history: tuple[Restart, ...] | None = None  # None: its registry's

    def key(self, by: str) -> str:
        if by == "team":
            return self.team or NONE
        if by == "experiment":
            return self.record.experiment or NONE
        if by == "component":
            return self.record.component
        return self.record.stack_name or self.record.id


@dataclass
class Group:
    key: str
    runs: int = 0
    priced: int = 0  # runs with a resource-time and rates
    measured: int = 0  # runs with a resource-time
    vcpu_seconds: float = 0.0
    gpu_seconds: float = 0.0
    memory_gib_seconds: float = 0.0
    amounts: dict[str, float] = field(default_factory=dict)  # currency -> amount
    ledgers: int = 0  # runs with a goodput ledger
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    part_costs: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    idle_gpu_seconds: float = 0.0
    sampled: int = 0  # ledgers of runs whose usage was sampled (local runs): the idle figure's

    def add(self, priced: cost.Priced, ledger: Ledger | None) -> None:
        self.runs += 1
        rt = priced.rt
        if rt is not None:
            self.measured += 1
            self.vcpu_seconds += rt.vcpu_seconds
            self.gpu_seconds += rt.gpu_seconds
            self.memory_gib_seconds += rt.memory_gib_seconds
        if priced.rates is not None and priced.amount is not None:
            self.priced += 1
            currency = priced.rates.currency
            self.amounts[currency] = self.amounts.get(currency, 0.0) + priced.amount
        if ledger is not None:
            self.ledgers += 1
            if ledger.sampled:  # a deployed run's accelerators were not watched: not known
                self.sampled += 1
                self.idle_gpu_seconds += ledger.idle_gpu_seconds
            for part in ledger.parts:
                self.parts[part.name] += part.seconds
                self.part_costs[part.name] += part.cost or 0.0

    @property
    def cost_text(self) -> str:
        if not self.amounts:
            return "no rate" if self.measured else NONE
        shown = ", ".join(f"{c} {a:.2f}" for c, a in sorted(self.amounts.items()))
        return shown + ("" if self.priced == self.runs else f" ({self.priced} of {self.runs})")

    def to_json(self, goodput: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "group": self.key,
            "runs": self.runs,
            "priced": self.priced,
            "vcpu_hours": round(self.vcpu_seconds / 3600, 6),
            "gpu_hours": round(self.gpu_seconds / 3600, 6),
            "memory_gib_hours": round(self.memory_gib_seconds / 3600, 6),
            "cost": {c: round(a, 6) for c, a in sorted(self.amounts.items())},
        }
        if goodput:
            doc["goodput"] = {
                "runs": self.ledgers,
                "parts": [
                    {"part": p, "seconds": round(self.parts[p], 3), "cost": self.part_costs[p]}
                    for p in PARTS
                ],
                # of the `sampled` runs only; None when none was (deployed runs: not known)
                "idle_gpu_seconds": round(self.idle_gpu_seconds, 3) if self.sampled else None,
                "idle_sampled_runs": self.sampled,
            }
        return doc


def roll_up(
    items: Sequence[Item],
    by: str,
    *,
    project: Path | None,
    ledger_of: Callable[[Item], Ledger | None] | None = None,
) -> list[Group]:
    """The groups, largest resource-time first (then by name: the same runs, the same order).
    `ledger_of`: with --goodput, a run's ledger (None for one without)."""
    if by not in BY:
        raise ValueError(by)
    pods = {i.record.id: i.pods for i in items if i.pods is not None}
    priced = cost.priced([i.record for i in items], None, project, pods)
    groups: dict[str, Group] = {}
    for item in items:
        key = item.key(by)
        group = groups.setdefault(key, Group(key))
        group.add(priced[item.record.id], ledger_of(item) if ledger_of else None)
    return sorted(groups.values(), key=lambda g: (-g.gpu_seconds, -g.vcpu_seconds, g.key))


def table(groups: Sequence[Group], by: str, goodput: bool) -> str:
    columns = [by.upper(), "RUNS", "VCPU-H", "GPU-H", "GIB-H", "COST"]
    if goodput:
        columns += ["LEDGERS", *(p.upper() for p in PARTS), "IDLE GPU-H"]
    rows = []
    for g in groups:
        row = [
            g.key,
            str(g.runs),
            f"{g.vcpu_seconds / 3600:.2f}",
            f"{g.gpu_seconds / 3600:.2f}",
            f"{g.memory_gib_seconds / 3600:.1f}",
            g.cost_text,
        ]
        if goodput:
            total = sum(g.parts.values())
            row.append(str(g.ledgers))
            row += [_share(g.parts[p], total) if g.ledgers else NONE for p in PARTS]
            row.append(_idle(g))
        rows.append(row)
    return texttable.plain(texttable.table(columns, rows))


def _idle(g: Group) -> str:
    """Idle GPU-hours of the runs whose usage was sampled; "not known" where none was (a
    deployed run's accelerators are not watched), with how many were where only some were."""
    if not g.sampled:
        return "not known" if g.ledgers else NONE
    shown = f"{g.idle_gpu_seconds / 3600:.2f}"
    return shown if g.sampled == g.ledgers else f"{shown} ({g.sampled} of {g.ledgers} runs)"


def _share(seconds: float, total: float) -> str:
    from trainstack.humanize import human_seconds

    return f"{human_seconds(seconds)} ({seconds / total:.0%})" if total > 0 else "0s"
