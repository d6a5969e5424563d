"""Charts as PNG files through matplotlib's Agg canvas: no display, no pyplot global state.

Each chart is drawn as its metadata says: the name as title and the description beneath it, axis
labels with their units, one left axis shared by the series or two axes (`ys` with two names),
and with `smooth` a trailing mean drawn over the raw line (which stays, faint).

Every text comes from a run's metrics.json (description, units) or a user's name: it is drawn as
plain text. matplotlib reads text with an even number of `$` as mathtext and fails on what its
parser refuses (`$\\frac{$`), so figures are built with `text.parse_math` and `text.usetex` off
(matplotlib's rcParams). Axis data past what the tick locator can space (a range overflowing a
float: x from -1e308 to 1e308) is clamped to ±`MAX_AXIS`, so such a point is drawn at the edge.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from trainstack.metrics import fonts
from trainstack.metrics.series import ChartData, Floats
from trainstack.metrics.spec import Axis
from trainstack.metrics.usage import ReplicaUsage
from trainstack.outfile import write_file

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")  # matplotlib's first four
SIZE = (8.0, 4.5)
DPI = 100
# Half of what a float64 holds, far below where MaxNLocator's step arithmetic overflows.
MAX_AXIS = 1e300

_P = ParamSpec("_P")
_R = TypeVar("_R")


def plain_text(draw: Callable[_P, _R]) -> Callable[_P, _R]:
    """`draw` with mathtext and TeX off for every text it creates (text reads its rcParams when
    it is made), in fonts that cover CJK names where this machine has one (trainstack.metrics.
    fonts); a figure it returns says which of its characters no font here has."""

    @functools.wraps(draw)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with matplotlib.rc_context(
            {"text.parse_math": False, "text.usetex": False, "font.family": fonts.families()}
        ):
            got = draw(*args, **kwargs)
            if isinstance(got, Figure):
                fonts.note_missing(got)
            return got

    return wrapped


def drawable(values: Floats) -> Floats:
    """`values` with ±inf and finite values beyond ±MAX_AXIS clamped to ±MAX_AXIS (NaN stays a
    gap): the tick locator cannot space an axis whose span overflows a float."""
    out: Floats = np.clip(values, -MAX_AXIS, MAX_AXIS)
    return out


def smooth(values: Floats) -> Floats:
    """Trailing mean over 5% of the points (at least 1), gaps ignored."""
    window = max(1, len(values) // 20)
    known = ~np.isnan(values)
    sums = np.cumsum(np.where(known, values, 0.0))
    counts = np.cumsum(known)
    lo = np.arange(len(values)) - window
    prev_sums = np.where(lo >= 0, sums[np.maximum(lo, 0)], 0.0)
    prev_counts = np.where(lo >= 0, counts[np.maximum(lo, 0)], 0)
    n = counts - prev_counts
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Floats = np.where(known & (n > 0), (sums - prev_sums) / np.maximum(n, 1), np.nan)
    return out


# zlib's level for PNGs: 6 (Pillow's default) for files; the console, drawing on request, takes 1
# (several times faster to encode, files a third larger).
FILE_COMPRESSION = 6


@plain_text
def chart_png(data: ChartData, *, compression: int = FILE_COMPRESSION) -> bytes:
    return _png(chart_figure(data), compression)


@plain_text
def chart_figure(data: ChartData) -> Figure:
    chart = data.chart
    fig = Figure(figsize=SIZE, dpi=DPI)
    left = fig.add_subplot()
    title = chart.name + (f"\n{chart.description}" if chart.description else "")
    left.set_title(title, fontsize=11)
    left.set_xlabel(chart.label(chart.x))
    left.set_ylabel(chart.label(chart.ys[0]))
    right: Axes | None = None
    if chart.dual:
        right = left.twinx()
        right.set_ylabel(chart.label(chart.ys[1]), color=COLORS[1])
        left.yaxis.label.set_color(COLORS[0])
    handles = []
    for i, col in enumerate(data.columns):
        ax = right if (col.axis is Axis.RIGHT and right is not None) else left
        color = COLORS[i % len(COLORS)]
        x, y = drawable(data.x), drawable(col.values)
        if chart.smooth:
            ax.plot(x, y, color=color, alpha=0.25, linewidth=1)
            (line,) = ax.plot(
                x, drawable(smooth(col.values)), color=color, linewidth=1.5, label=col.name
            )
        else:
            (line,) = ax.plot(
                x,
                y,
                color=color,
                linewidth=1.5,
                label=col.name,
                marker="o" if len(data.x) <= 30 else None,
                markersize=3,
            )
        handles.append(line)
    if len(handles) > 1:
        left.legend(handles=handles, loc="best", fontsize=9)
    left.grid(True, alpha=0.3)
    _whole_ticks_for_counts(left, [data.x])
    return fig


MIN_USAGE_SAMPLES = 2  # fewer is not a line


@plain_text
def usage_png(rep: ReplicaUsage, *, compression: int = FILE_COMPRESSION) -> bytes:
    """CPU and memory, plus GPU utilisation and memory per device when the replica has GPUs."""
    rows = 2 if rep.gpus else 1
    fig = Figure(figsize=(SIZE[0], 3.2 * rows), dpi=DPI)
    axes = fig.subplots(rows, 2, squeeze=False)
    fig.suptitle(f"resource usage: {rep.replica}", fontsize=11)
    _line(axes[0][0], rep.t, [("CPU", rep.cpu_percent)], "CPU (%)")
    _line(axes[0][1], rep.t, [("memory", rep.rss_bytes / 1e6)], "memory (MB)")
    if len(rep.t) < MIN_USAGE_SAMPLES:
        for ax in axes[0]:
            _too_short(ax, len(rep.t))
    if rep.gpus:
        _line(axes[1][0], rep.t[:0], [], "GPU utilisation (%)")
        _line(axes[1][1], rep.t[:0], [], "GPU memory (MB)")
        for i, g in enumerate(rep.gpus):
            color = COLORS[i % len(COLORS)]
            t = drawable(g.t)
            axes[1][0].plot(t, drawable(g.util_percent), color=color, label=f"GPU {g.index}")
            axes[1][1].plot(
                t, drawable(g.mem_used_bytes / 1e6), color=color, label=f"GPU {g.index}"
            )
        _from_zero(axes[1][0], [g.util_percent for g in rep.gpus])
        _from_zero(axes[1][1], [g.mem_used_bytes / 1e6 for g in rep.gpus])
        axes[1][0].legend(fontsize=8)
    fig.tight_layout()
    return _png(fig, compression)


@dataclass(frozen=True)
class Overlay:
    """One run's line on a chart of one metric across runs; `label` names it in the legend."""

    label: str
    x: Floats
    values: Floats


@plain_text
def overlay_png(
    metric: str, x_label: str, lines: Sequence[Overlay], *, compression: int = FILE_COMPRESSION
) -> bytes:
    fig = Figure(figsize=SIZE, dpi=DPI)
    ax = fig.add_subplot()
    ax.set_title(f"{metric} across {len(lines)} runs", fontsize=11)
    ax.set_xlabel(x_label)
    ax.set_ylabel(metric)
    for i, line in enumerate(lines):
        ax.plot(
            drawable(line.x),
            drawable(line.values),
            color=COLORS[i % len(COLORS)] if i < len(COLORS) else None,
            linewidth=1.5,
            label=line.label,
            marker="o" if len(line.x) <= 30 else None,
            markersize=3,
        )
    ax.legend(fontsize=9)
    ax.grid(True, alpha=0.3)
    _whole_ticks_for_counts(ax, [line.x for line in lines])
    return _png(fig, compression)


def write(path: Path, png: bytes) -> Path:
    return write_file(path, png)


def _too_short(ax: Axes, samples: int) -> None:
    """A replica that ran for less than a sampling interval or two: one point (or none) is no
    chart, and matplotlib would centre it on axes from -0.04 to 0.04."""
    ax.text(
        0.5,
        0.5,
        f"too short to sample ({samples} sample{'' if samples == 1 else 's'})",
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=10,
        color="#555555",
    )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([])
    ax.set_yticks([])


def _line(ax: Axes, t: Floats, lines: list[tuple[str, Floats]], label: str) -> None:
    for i, (name, values) in enumerate(lines):
        ax.plot(
            drawable(t),
            drawable(values),
            color=COLORS[i],
            label=name,
            linewidth=1.2,
            marker="o" if len(t) <= 30 else None,
            markersize=3,
        )
    ax.set_xlabel("seconds since start")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    _from_zero(ax, [v for _, v in lines])


def _from_zero(ax: Axes, series: Sequence[Floats]) -> None:
    """CPU, memory and GPU figures are never negative: the axis starts at 0, and a flat line at
    0 still gets an axis of some height."""
    tops = [float(np.nanmax(drawable(v))) for v in series if np.any(~np.isnan(v))]
    top = max(tops, default=0.0)
    ax.set_ylim(0, top * 1.1 if top > 0 else 1.0)


def _whole_ticks_for_counts(ax: Axes, xs: Sequence[Floats]) -> None:
    """An x that only holds whole numbers (epochs, steps) gets whole-number ticks: matplotlib
    would tick three epochs at 1.00, 1.25, ... 3.00."""
    known = [drawable(x[~np.isnan(x)]) for x in xs]
    if any(len(x) for x in known) and all(np.array_equal(x, np.round(x)) for x in known):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _png(fig: Figure, compression: int = FILE_COMPRESSION) -> bytes:
    fonts.note_missing(fig)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": compression})
    return buf.getvalue()
