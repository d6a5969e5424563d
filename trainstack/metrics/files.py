"""Which charts of a run to write, and writing them as PNG or CSV files named after the chart
(`<chart>.png`, `usage-<replica>.png`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainstack.errors import UserError
from trainstack.metrics import export
from trainstack.metrics.runview import RunView
from trainstack.metrics.series import ChartData
from trainstack.metrics.usage import ReplicaUsage
from trainstack.suggest import did_you_mean

USAGE_PREFIX = "usage-"


@dataclass(frozen=True)
class Selection:
    charts: tuple[ChartData, ...]
    usage: tuple[ReplicaUsage, ...]


def select(v: RunView, names: tuple[str, ...]) -> Selection:
    if not names:
        return Selection(v.metrics.charts, v.usage)
    known = {c.chart.name: c for c in v.metrics.charts}
    usage = {USAGE_PREFIX + u.replica: u for u in v.usage}
    for name in names:
        if name not in known and name not in usage:
            raise UserError(
                f"run {v.record.id} has no chart {name!r}.{did_you_mean(name, [*known, *usage])}",
                hint="its charts: " + (", ".join([*known, *usage]) or "none"),
            )
    return Selection(
        tuple(known[n] for n in names if n in known), tuple(usage[n] for n in names if n in usage)
    )


def write_png(sel: Selection, directory: Path) -> list[Path]:
    # Only here: matplotlib costs most of a second to import, and the table needs none of it.
    from trainstack.metrics import draw

    out = [draw.write(directory / f"{c.chart.name}.png", draw.chart_png(c)) for c in sel.charts]
    out += [
        draw.write(directory / f"{USAGE_PREFIX}{u.replica}.png", draw.usage_png(u))
        for u in sel.usage
    ]
    return out


def write_csv(sel: Selection, directory: Path) -> list[Path]:
    out = [export.write(directory / f"{c.chart.name}.csv", export.chart_csv(c)) for c in sel.charts]
    out += [
        export.write(directory / f"{USAGE_PREFIX}{u.replica}.csv", export.usage_csv(u))
        for u in sel.usage
    ]
    return out
