"""A run's progress clock, `progress.jsonl` (written by trainstack.local.progress while a local
run runs): when its replicas first wrote output, and each step its metrics reached, with the time
it was seen. The series files keep steps but not when each was reached; the goodput ledger
(trainstack.metrics.goodput) needs both.

    {"t": 1733180000.1, "output": true}
    {"t": 1733180002.5, "step": 4}

A step is the x of the last row of the run's step chart: the first chart whose x is named like a
step (`step`, `iteration`, …), else the first chart. A line is written whenever that value
changes, so a restart that rewrites the series from an earlier checkpoint shows as a lower step.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path

from trainstack import boundedjson
from trainstack.metrics.spec import load
from trainstack.regularfile import bounded_lines, open_within

STEP_AXES = ("step", "steps", "global_step", "iteration", "iter", "batch")
# The end of a series file read for its last row: rows are short; this bounds a damaged one.
_TAIL = 4096


@dataclass(frozen=True)
class Mark:
    t: float
    step: float | None  # None: the replicas' first output


def latest_step(directory: Path, *, root: Path) -> float | None:
    """The step the metrics in `directory` have reached; None before the step chart has a row."""
    found = step_chart(directory, root=root)
    return None if found is None else _last_x(found, root)


def step_chart(directory: Path, *, root: Path) -> Path | None:
    """The step chart's series file in `directory`; None without a chart."""
    spec = load(directory, root=root)
    if not spec.charts:
        return None
    chart = next((c for c in spec.charts if c.x.lower() in STEP_AXES), spec.charts[0])
    return directory / chart.file_name


def _last_x(path: Path, root: Path) -> float | None:
    try:
        with open_within(root, path) as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _TAIL))
            tail = fh.read(_TAIL)
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            value = float(line.split(b",", 1)[0])
        except ValueError:  # the header, a gap, half a row
            continue
        if math.isfinite(value):
            return value
    return None


def read(path: Path, *, root: Path) -> tuple[Mark, ...]:
    """The marks in time order; unreadable lines are skipped, a missing file is no marks."""
    marks: list[Mark] = []
    try:
        with open_within(root, path) as fh:
            for line in bounded_lines(fh):
                with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
                    doc = boundedjson.loads(line)
                    t = float(doc["t"])
                    if doc.get("output") is True:
                        marks.append(Mark(t, None))
                    elif "step" in doc:
                        marks.append(Mark(t, float(doc["step"])))
    except OSError:
        return ()
    return tuple(sorted(marks, key=lambda m: m.t))
