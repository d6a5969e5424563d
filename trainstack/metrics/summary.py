"""Each metric series' last and best value, kept beside a run (`<run dir>/metrics-summary.json`)
so that a listing of many runs (the console's metric column, `runs list --metric`) reads a few
hundred bytes per run instead of every point of every series.

Written when a local run ends, and by `runs list --metric` for a finished run that has none (an
older run: once). The file records the metrics folder it was computed from (each file's name,
size and modification time): a summary whose folder has changed since (a run still writing, a
folder edited by hand) is not used, and the values are computed from the series as before. The
console only reads: it computes a missing or stale summary in memory and keeps it in its cache.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from trainstack import boundedjson
from trainstack.contract.rundir import RunDir
from trainstack.errors import UserError
from trainstack.metrics import series
from trainstack.metrics.values import Goal, MetricValue, values
from trainstack.outfile import write_file
from trainstack.regularfile import read_within

# The format's version: a summary of another is recomputed.
VERSION = 1


def source(root: Path) -> list[list[object]]:
    """The metrics folder as a summary depends on it: every file under it, by relative path,
    with its size and modification time (ns)."""
    folder = RunDir(root).metrics
    out: list[list[object]] = []
    for here, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = Path(here) / name
            try:
                st = path.stat()
            except OSError:
                continue
            out.append([str(path.relative_to(folder)), st.st_size, st.st_mtime_ns])
    return out


def compute(root: Path) -> tuple[MetricValue, ...]:
    return tuple(values(series.read(RunDir(root).metrics, root=root)))


def write(root: Path) -> tuple[MetricValue, ...]:
    """Compute the run's summary and keep it beside the run; what was computed."""
    before = source(root)
    found = compute(root)
    if source(root) == before:  # nothing was written meanwhile: the summary is of this folder
        doc = {"version": VERSION, "source": before, "values": [asdict(v) for v in found]}
        write_file(RunDir(root).metrics_summary, json.dumps(doc, sort_keys=True))
    return found


def read(root: Path) -> tuple[MetricValue, ...] | None:
    """The kept summary, or None: none, unreadable, of another format, or of a metrics folder
    that has changed since."""
    try:
        doc = boundedjson.loads(read_within(root, RunDir(root).metrics_summary))
    except (OSError, ValueError, UserError):
        return None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        return None
    if doc.get("source") != source(root):
        return None
    try:
        return tuple(_value(v) for v in doc["values"])
    except (KeyError, TypeError, ValueError):
        return None


def _value(raw: dict[str, object]) -> MetricValue:
    def number(key: str) -> float | None:
        v = raw[key]
        return None if v is None else float(v)  # type: ignore[arg-type]

    goal = raw["goal"]
    return MetricValue(
        chart=str(raw["chart"]),
        column=str(raw["column"]),
        goal=None if goal is None else Goal(str(goal)),
        points=int(raw["points"]),  # type: ignore[call-overload]
        last=number("last"),
        last_x=number("last_x"),
        best=number("best"),
        best_x=number("best_x"),
    )


def of(root: Path, *, keep: bool) -> tuple[MetricValue, ...]:
    """The run's values: the kept summary when it is current, else computed (and, `keep`,
    kept for the next reader)."""
    kept = read(root)
    if kept is not None:
        return kept
    return write(root) if keep else compute(root)
