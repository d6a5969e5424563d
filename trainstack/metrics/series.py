"""The series files: `$METRICS/<chart name>.csv`, a header row naming the x column and then each
value column (the chart's `series`, or its `ys` when it has none), one row per x value.

An empty cell is a gap (that column has no value at that x). Problems are diagnostics with the
file, line and column; a chart whose file is unusable is left out, the others are kept.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from trainstack.errors import Diagnostic
from trainstack.excerpt import excerpt
from trainstack.metrics.spec import Axis, Chart, MetricsSpec, load
from trainstack.regularfile import describe, read_within

Floats = npt.NDArray[np.float64]
# What is read of one series file: millions of points, far more than a chart can show, and a
# bound on what a damaged (or sparse, gigabytes long) file costs.
MAX_SERIES_BYTES = 256 << 20


@dataclass(frozen=True)
class Column:
    name: str
    axis: Axis
    values: Floats


@dataclass(frozen=True)
class ChartData:
    chart: Chart
    path: Path
    x: Floats
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Metrics:
    """Everything a run's `$METRICS` holds, checked: drawable charts plus every problem."""

    spec: MetricsSpec
    charts: tuple[ChartData, ...]
    problems: tuple[Diagnostic, ...]

    def chart(self, name: str) -> ChartData | None:
        return next((c for c in self.charts if c.chart.name == name), None)


def read(directory: Path, *, root: Path | None = None, spec: MetricsSpec | None = None) -> Metrics:
    """`directory`'s metrics and series; `root` is the run directory (by default the folder
    holding `directory`, as `$METRICS` is `<run dir>/metrics`), out of which no link is followed
    (trainstack.regularfile.open_within). `spec`: its metrics.json, already loaded from there."""
    root = directory.parent if root is None else root
    spec = load(directory, root=root) if spec is None else spec
    problems = list(spec.problems)
    charts = []
    for chart in spec.charts:
        data, found = read_chart(directory, chart, root=root)
        problems.extend(found)
        if data is not None:
            charts.append(data)
    return Metrics(spec, tuple(charts), tuple(problems))


def read_chart(
    directory: Path, chart: Chart, *, root: Path
) -> tuple[ChartData | None, list[Diagnostic]]:
    path = directory / chart.file_name
    file = str(path)
    expected = [chart.x, *chart.columns]
    try:
        raw = read_within(root, path, MAX_SERIES_BYTES)
        if len(raw) > MAX_SERIES_BYTES:
            return None, [
                _file_problem(
                    file,
                    f"over {MAX_SERIES_BYTES >> 20} MiB: not read",
                    hint="write fewer points (every Nth step): a chart shows a few thousand",
                )
            ]
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return None, [
            _file_problem(
                file,
                f"missing: chart {chart.name!r} has no series file",
                hint=f"header: {','.join(expected)}",
            )
        ]
    except (OSError, UnicodeDecodeError) as err:
        why = describe(err) if isinstance(err, OSError) else f"not UTF-8 (byte {err.start})"
        return None, [_file_problem(file, f"cannot be read: {why}")]
    head, _, body = text.partition("\n")
    try:
        header = [h.strip() for h in next(csv.reader([head]), [])]
    except csv.Error as err:  # a field over csv's field_size_limit (128 KiB)
        return None, [Diagnostic(file, 1, None, "header", f"not CSV: {err}", code="metrics")]
    if header != expected:
        # Quoted only in part: the line is whatever the file holds (an environment, say).
        found = excerpt(",".join(header)) if header else "(empty)"
        return None, [
            Diagnostic(
                file,
                1,
                None,
                "header",
                f"{found}: expected "
                f"{','.join(expected)} (x, then each of the chart's "
                f"{'series' if chart.series else 'ys'})",
                code="metrics",
            )
        ]
    width = len(expected)
    table: Floats | None = None
    if body.strip():
        try:
            # The fast path: numbers only, every row complete (the usual case, and the big one).
            table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError:
            table = None
        if table is None or table.shape[1] != width:
            table, problem = _slow(body, width, file)
            if problem is not None:
                return None, [problem]
    else:
        table = np.empty((0, width))
    x = table[:, 0]
    if np.isnan(x).any():
        line = int(np.flatnonzero(np.isnan(x))[0]) + 2
        return None, [Diagnostic(file, line, 1, chart.x, "empty x value", code="metrics")]
    columns = tuple(
        Column(name, chart.axis_of(name), table[:, i + 1]) for i, name in enumerate(chart.columns)
    )
    return ChartData(chart, path, x, columns), []


def _file_problem(file: str, message: str, hint: str | None = None) -> Diagnostic:
    """A problem with the series file as a whole (no line, no field)."""
    return Diagnostic(file, None, None, "", message, hint=hint, code="metrics")


def _slow(body: str, width: int, file: str) -> tuple[Floats, Diagnostic | None]:
    """Row by row, to allow gaps and to say exactly where a bad cell is."""
    rows: list[list[float]] = []
    lines = enumerate(csv.reader(io.StringIO(body)), start=2)
    lineno = 1
    while True:
        try:
            lineno, row = next(lines)
        except StopIteration:
            break
        except csv.Error as err:  # a field over csv's field_size_limit (128 KiB)
            return np.empty((0, width)), Diagnostic(
                file, lineno + 1, None, "", f"not CSV: {err}", code="metrics"
            )
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != width:
            return np.empty((0, width)), Diagnostic(
                file, lineno, None, "", f"{len(row)} cells; expected {width}", code="metrics"
            )
        values = []
        for col, cell in enumerate(row, start=1):
            cell = cell.strip()
            if not cell:
                values.append(np.nan)
                continue
            try:
                values.append(float(cell))
            except ValueError:
                return np.empty((0, width)), Diagnostic(
                    file, lineno, col, "", f"{excerpt(cell)} is not a number", code="metrics"
                )
        rows.append(values)
    return np.array(rows, dtype=np.float64).reshape(-1, width), None
