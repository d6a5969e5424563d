"""`runs compare`: parameters, resources and metrics of several runs side by side, and one
metric of each drawn on one chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trainstack.errors import UserError
from trainstack.humanize import human_seconds
from trainstack.metrics.runview import RunView
from trainstack.metrics.table import value_text
from trainstack.metrics.values import find, require
from trainstack.texttable import aligned


def side_by_side(
    views: Sequence[RunView], costs: Mapping[str, tuple[str, str, str]] | None = None
) -> str:
    """`costs`: run id -> (resource-time, cost, idle share), trainstack.metrics.cost.Priced."""
    return aligned(rows(views, costs))


def rows(
    views: Sequence[RunView], costs: Mapping[str, tuple[str, str, str]] | None = None
) -> list[tuple[str, ...]]:
    """The comparison's rows: a heading row of run ids, then one row per field (status, ...,
    each parameter, each role's resources, each metric's last/best), a cell per run."""
    rows: list[tuple[str, ...]] = [("", *(v.record.id for v in views))]
    rows.append(("status", *(str(v.record.status) for v in views)))
    rows.append(
        ("component", *(f"{v.record.component}@{v.record.component_version}" for v in views))
    )
    rows.append(("duration", *(human_seconds(v.record.duration) for v in views)))
    rows.append(("restarts", *(str(v.record.restarts) for v in views)))
    if costs is not None:
        for i, name in enumerate(("resource-time", "cost", "idle")):
            rows.append((name, *(costs.get(v.record.id, ("-",) * 3)[i] for v in views)))
    for name in sorted({k for v in views for k in v.parameters}):
        rows.append((f"param {name}", *(_text(v.parameters.get(name, "-")) for v in views)))
    for role in sorted({k for v in views for k in v.resources}):
        rows.append((f"resources {role}", *(v.resources.get(role, "-") for v in views)))
    ids = list(dict.fromkeys(m.id for v in views for m in v.values))
    for metric in ids:
        cells = []
        for v in views:
            hit = find(list(v.values), metric)
            cells.append(value_text(hit) if hit else "-")
        rows.append((metric, *cells))
    if any(v.metrics.problems for v in views):
        rows.append(("metrics problems", *(str(len(v.metrics.problems)) for v in views)))
    return rows


def overlay(views: Sequence[RunView], metric: str, *, thin: bool = False) -> bytes:
    """One metric of each run on one chart, each line named by the parameters that set it apart
    from the others (its run id when none do); `thin`: long series downsampled for drawing
    (trainstack.metrics.downsample), as the console draws them."""
    # Only here: the side-by-side table needs no plotting stack (it costs most of a second).
    from trainstack.metrics import downsample, draw
    from trainstack.metrics.labels import differing

    lines = []
    x_label = ""
    names = differing([v.parameters for v in views])
    for v, params in zip(views, names, strict=True):
        hit = require(list(v.values), metric, v.record.id)
        data = v.metrics.chart(hit.chart)
        if data is None:  # values come from drawable charts only
            raise UserError(f"run {v.record.id}: chart {hit.chart!r} cannot be read")
        col = next(c for c in data.columns if c.name == hit.column)
        x_label = x_label or data.chart.label(data.chart.x)
        label = f"{params} ({v.record.id})" if params else v.record.id
        x, values = data.x, col.values
        if thin and (idx := downsample.keep(len(x), [values])) is not None:
            x, values = x[idx], values[idx]
        lines.append(draw.Overlay(label, x, values))
    if thin:  # drawn on request: encoded fast (trainstack.metrics.draw)
        return draw.overlay_png(metric, x_label, lines, compression=1)
    return draw.overlay_png(metric, x_label, lines)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
