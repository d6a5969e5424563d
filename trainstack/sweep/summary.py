"""The end of a sweep: the best trial, its parameters and objective, and an optimization-history
PNG (each trial's objective and the best so far, matplotlib's Agg canvas as trainstack.metrics
draws, no pyplot)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.metrics.values import number
from trainstack.spec.sweepmodel import Goal
from trainstack.sweep.view import TrialRow, TrialState, params_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HISTORY_PNG = "history.png"


def best(rows: list[TrialRow], goal: Goal) -> TrialRow | None:
    # Finite values only: a study written before ±inf failed a trial may hold one.
    done = [
        (r.value, r)
        for r in rows
        if r.state is TrialState.COMPLETE and r.value is not None and math.isfinite(r.value)
    ]
    if not done:
        return None
    sign = 1.0 if goal is Goal.MINIMIZE else -1.0
    return min(done, key=lambda p: (sign * p[0], p[1].number))[1]


def summary(name: str, rows: list[TrialRow], goal: Goal, metric: str, png: Path | None) -> str:
    counts = {s: sum(r.state is s for r in rows) for s in TrialState}
    lines = [f"sweep {name}: " + ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)]
    top = best(rows, goal)
    if top is None:
        lines.append("  no trial completed with an objective value")
    else:
        lines.append(
            f"  best:     trial {top.number} ({top.run_id or top.name}) {metric} = "
            f"{number(top.value)} ({goal.value})"
        )
        lines.append(f"  params:   {params_text(top.params)}")
    for r in rows:
        if r.state is TrialState.FAILED and r.reason:
            lines.append(f"  trial {r.number} failed: {r.reason}")
    if png is not None:
        lines.append(f"  history:  {png}")
    lines.append(f"  details:  trainstack sweeps show {name}")
    return "\n".join(lines)


MAX_ANNOTATED = 30  # beyond that, labels overlap into noise


def draw_history(rows: list[TrialRow], goal: Goal, metric: str, path: Path) -> Path | None:
    from trainstack.metrics.draw import plain_text

    fig = plain_text(history_figure)(rows, goal, metric)
    if fig is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp)
    tmp.replace(path)
    return path


def history_png(rows: list[TrialRow], goal: Goal, metric: str) -> bytes | None:
    """The optimization history as PNG bytes (the console draws it on request)."""
    import io

    from trainstack.metrics.draw import plain_text

    fig = plain_text(history_figure)(rows, goal, metric)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def history_figure(rows: list[TrialRow], goal: Goal, metric: str) -> Figure | None:
    """Each trial's objective and the best so far; None before a trial has a value. Call it
    under `plain_text` (trainstack.metrics.draw): trial labels are user text."""
    scored = sorted(
        (
            r
            for r in rows
            if r.state is TrialState.COMPLETE and r.value is not None and math.isfinite(r.value)
        ),
        key=lambda r: r.number,
    )
    points = [(r.number, float(r.value or 0.0)) for r in scored]
    if not points:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as Canvas
    from matplotlib.ticker import MaxNLocator

    from trainstack.metrics.labels import differing

    fig = Canvas(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = [p[0] for p in points]
    ys = [float(p[1]) for p in points]
    better = min if goal is Goal.MINIMIZE else max
    running: list[float] = []
    for y in ys:
        running.append(y if not running else better(running[-1], y))
    ax.scatter(xs, ys, label="trial", zorder=3)
    ax.step(xs, running, where="post", color="tab:red", label="best so far")
    # Each point says which trial it is: the parameters that differ between trials.
    if len(scored) <= MAX_ANNOTATED:
        for (x, y), text in zip(points, differing([r.params for r in scored]), strict=True):
            if text:
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # trial 1.5 is no trial
    ax.set_xlabel("trial")
    ax.set_ylabel(metric)
    ax.set_title(f"optimization history ({goal.value})")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig
