"""CSV export: each chart's series as the run wrote them (x, then its columns), and each
replica's usage (seconds since start, CPU %, memory, then per GPU utilisation and memory)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from trainstack.metrics.series import ChartData, Floats
from trainstack.metrics.usage import ReplicaUsage
from trainstack.outfile import write_file


def chart_csv(data: ChartData) -> str:
    header = [data.chart.x, *(c.name for c in data.columns)]
    return _table(header, [data.x, *(c.values for c in data.columns)])


def usage_csv(rep: ReplicaUsage) -> str:
    header = ["seconds", "cpu_percent", "rss_bytes"]
    cols = [rep.t, rep.cpu_percent, rep.rss_bytes]
    for g in rep.gpus:
        at = {float(t): i for i, t in enumerate(g.t)}
        idx = np.array([at.get(float(t), -1) for t in rep.t])
        for name, series in (
            ("util_percent", g.util_percent),
            ("mem_used_bytes", g.mem_used_bytes),
        ):
            header.append(f"gpu{g.index}_{name}")
            cols.append(
                np.where(idx >= 0, series[np.maximum(idx, 0)], np.nan)
                if len(g.t)
                else np.full(len(rep.t), np.nan)
            )
    return _table(header, cols)


def write(path: Path, text: str) -> Path:
    return write_file(path, text)


def _table(header: list[str], cols: list[Floats]) -> str:
    buf = io.StringIO()
    buf.write(",".join(header) + "\n")
    if len(cols[0]):
        np.savetxt(buf, np.column_stack(cols), fmt="%.10g", delimiter=",")
    # %g writes a gap as "nan"; an empty cell is what a spreadsheet (and our reader) expects.
    return buf.getvalue().replace("nan", "")
