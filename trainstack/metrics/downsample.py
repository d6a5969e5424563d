"""Long series thinned for drawing: a chart is some 800 pixels wide, a series may hold millions
of points. Each column keeps, per bucket of consecutive points, its lowest and highest value and
its first gap (NaN), so spikes and gaps survive; the x values are shared, so the points kept are
the union over the columns, plus the first and the last."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from trainstack.metrics.series import ChartData, Floats
from trainstack.metrics.usage import ReplicaUsage

# per series, 2 pixels each of an 800-pixel chart; at most 3 points each (min, max, first gap)
BUCKETS = 400

Indices = npt.NDArray[np.intp]


def keep(n: int, columns: Sequence[Floats], buckets: int = BUCKETS) -> Indices | None:
    """The indices of the points to draw, ascending; None when all `n` are few enough."""
    if n <= 3 * buckets:
        return None
    size = -(-n // buckets)  # ceil: every bucket but the last is full
    rows = -(-n // size)
    base = np.arange(rows, dtype=np.intp) * size
    picks = [np.array([0, n - 1], dtype=np.intp)]
    for values in columns:
        padded = np.full(rows * size, np.nan)
        padded[:n] = values
        grid = padded.reshape(rows, size)
        gap = np.isnan(grid)
        low = np.where(gap, np.inf, grid).argmin(axis=1)
        high = np.where(gap, -np.inf, grid).argmax(axis=1)
        first_gap = gap.argmax(axis=1)
        picks.extend((base + low, base + high, (base + first_gap)[gap.any(axis=1)]))
    kept = np.unique(np.concatenate(picks))
    out: Indices = kept[kept < n]
    return out


def chart(data: ChartData, buckets: int = BUCKETS) -> ChartData:
    """`data` with at most about 3 × `buckets` points per column."""
    idx = keep(len(data.x), [c.values for c in data.columns], buckets)
    if idx is None:
        return data
    return replace(
        data,
        x=data.x[idx],
        columns=tuple(replace(c, values=c.values[idx]) for c in data.columns),
    )


def usage(rep: ReplicaUsage, buckets: int = BUCKETS) -> ReplicaUsage:
    """A replica's usage samples thinned as `chart` thins a chart (each GPU on its own times)."""
    idx = keep(len(rep.t), [rep.cpu_percent, rep.rss_bytes], buckets)
    gpus = []
    for g in rep.gpus:
        gi = keep(len(g.t), [g.util_percent, g.mem_used_bytes], buckets)
        if gi is not None:
            g = replace(
                g, t=g.t[gi], util_percent=g.util_percent[gi], mem_used_bytes=g.mem_used_bytes[gi]
            )
        gpus.append(g)
    if idx is None:
        return replace(rep, gpus=tuple(gpus))
    return replace(
        rep,
        t=rep.t[idx],
        cpu_percent=rep.cpu_percent[idx],
        rss_bytes=rep.rss_bytes[idx],
        gpus=tuple(gpus),
    )
