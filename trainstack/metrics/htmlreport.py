"""`trainstack report`: one self-contained HTML page for a run — charts embedded as PNG data URIs,
parameters, resources, usage, outcome, restarts and the tail of each replica's log — to attach to
a ticket. Everything is computed here; the template only lays it out (autoescaped)."""

from __future__ import annotations

import base64
import json
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from trainstack.contract.rundir import RunDir
from trainstack.humanize import human_bytes, human_seconds
from trainstack.metrics.draw import chart_png, usage_png
from trainstack.metrics.runview import RunView
from trainstack.metrics.usage import ReplicaUsage
from trainstack.metrics.values import MetricValue, number
from trainstack.registry.model import Restart, RunRecord
from trainstack.regularfile import open_within

LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 256 << 10  # read of each log part, from its end


@dataclass(frozen=True)
class Image:
    title: str
    src: str  # a data: URI


@dataclass(frozen=True)
class LogTail:
    replica: str
    lines: int
    text: str


@dataclass(frozen=True)
class Mark:
    """One restart on the recovery timeline: `left` is its place in the run's duration, %."""

    left: float
    label: str
    title: str


@dataclass(frozen=True)
class Page:
    title: str
    outcome: tuple[tuple[str, str], ...]
    parameters: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]
    metric_rows: tuple[tuple[str, ...], ...]
    charts: tuple[Image, ...]
    problems: tuple[str, ...]
    usage_rows: tuple[tuple[str, ...], ...]
    usage_charts: tuple[Image, ...]
    idle: tuple[str, ...]
    logs: tuple[LogTail, ...]
    generated: str
    # the recovery history: a row per restart (when, replica, reason, exit, ran, counted, detail)
    # and its marks on a timeline of the run
    recovery_rows: tuple[tuple[str, ...], ...] = ()
    recovery_marks: tuple[Mark, ...] = ()


def build(
    v: RunView,
    history: Sequence[Restart] = (),
    *,
    cost: str | None = None,
    goodput: Sequence[str] = (),
) -> Page:
    """`cost`: resource-time, cost and idle share (trainstack.metrics.cost.summary); `goodput`:
    the ledger's lines (trainstack.metrics.goodput.Ledger.lines)."""
    r = v.record
    return Page(
        title=f"trainstack run {r.id}",
        outcome=outcome_rows(r, cost, goodput),
        parameters=parameter_rows(v.parameters),
        resources=tuple(sorted(v.resources.items())),
        metric_rows=metric_rows(v.values),
        charts=tuple(Image(c.chart.name, _uri(chart_png(c))) for c in v.metrics.charts),
        problems=tuple(p.render() for p in v.metrics.problems),
        usage_rows=usage_rows(v.usage),
        usage_charts=tuple(Image(f"usage {u.replica}", _uri(usage_png(u))) for u in v.usage),
        idle=tuple(w.render() for w in v.idle),
        logs=_tails(v.run_dir),
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        recovery_rows=tuple(recovery_row(h) for h in history),
        recovery_marks=marks(r, history),
    )


def _tails(root: Path | None) -> tuple[LogTail, ...]:
    """Each replica log's last lines; none for a deployed run (`trainstack logs` reads them)."""
    if root is None:
        return ()
    return tuple(_tail(p, root) for p in sorted(RunDir(root).logs.glob("*.log")))


# The tables below are the report's and the console's (trainstack.ui) alike.


def outcome_rows(
    r: RunRecord, cost: str | None = None, goodput: Sequence[str] = ()
) -> tuple[tuple[str, str], ...]:
    outcome = [
        ("run", f"{r.id} ({r.name})"),
        ("status", str(r.status)),
        ("component", f"{r.component}@{r.component_version}"),
        ("duration", human_seconds(r.duration)),
        ("restarts", str(r.restarts)),
    ]
    if r.reason:
        outcome.insert(2, ("reason", r.reason))
    if cost:
        outcome.append(("cost", cost))
    outcome.extend(("goodput", line) for line in goodput)
    if r.experiment:
        outcome.append(("experiment", r.experiment))
    if r.resumed_from:
        outcome.append(("resumed from", r.resumed_from))
    outcome.extend(("replica " + e.key, e.state(r.status.finished)) for e in r.exits)
    return tuple(outcome)


def parameter_rows(parameters: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (k, val if isinstance(val, str) else json.dumps(val))
        for k, val in sorted(parameters.items())
    )


def metric_rows(found: Sequence[MetricValue]) -> tuple[tuple[str, ...], ...]:
    """(metric, last, at, best, at, goal) per series."""
    return tuple(
        (
            m.id,
            number(m.last),
            number(m.last_x),
            number(m.best),
            number(m.best_x),
            str(m.goal) if m.goal else "-",
        )
        for m in found
    )


def usage_rows(found: Sequence[ReplicaUsage]) -> tuple[tuple[str, ...], ...]:
    """(replica, CPU mean, CPU max, memory max, GPU, samples) per replica."""
    rows = []
    for u in found:
        gpu = "-"
        if u.gpus:
            gpu = ", ".join(
                f"GPU {g.index}: {g.util_percent.mean():.0f}% mean, "
                f"{human_bytes(int(g.mem_used_bytes.max()))} max"
                for g in u.gpus
            )
        sampled = len(u.t) > 0  # a replica that ended before its first sample has none
        rows.append(
            (
                u.replica,
                f"{u.cpu_percent.mean():.0f}%" if sampled else "-",
                f"{u.cpu_percent.max():.0f}%" if sampled else "-",
                human_bytes(int(u.rss_bytes.max())) if sampled else "-",
                gpu,
                str(len(u.t)),
            )
        )
    return tuple(rows)


def recovery_row(h: Restart) -> tuple[str, ...]:
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(h.at)),
        h.key,
        h.reason,
        "-" if h.exit_code is None else str(h.exit_code),
        human_seconds(h.ran_seconds),
        "yes" if h.counted else "no",
        h.detail,
    )


def marks(r: RunRecord, history: Sequence[Restart]) -> tuple[Mark, ...]:
    if not history:
        return ()
    start = r.started_at if r.started_at is not None else min(h.at for h in history)
    end = r.finished_at if r.finished_at is not None else max(h.at for h in history)
    span = max(end - start, 1e-9)
    return tuple(
        Mark(
            left=round(min(100.0, max(0.0, (h.at - start) / span * 100)), 2),
            label=f"{h.key} {h.reason}",
            title=f"{human_seconds(h.at - start)} into the run: {h.key} {h.reason}",
        )
        for h in history
    )


def render(page: Page) -> str:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("trainstack.metrics", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2").render(page=page)


def _uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _tail(path: Path, root: Path) -> LogTail:
    from trainstack.logfiles import chain
    from trainstack.logview import plain

    lines: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    for part in chain(path):  # kept rotations first, so a log just rotated still has its tail
        try:
            with open_within(root, part) as fh:
                # Only the end: a log part can be hundreds of MB, or one line (a progress bar
                # redrawn with \r) that long.
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - LOG_TAIL_BYTES))
                data = fh.read(LOG_TAIL_BYTES)
        except OSError:
            continue
        # As the console shows a log: as text, without a terminal's escape codes.
        text = plain(data.decode("utf-8", errors="replace"))
        pieces = text.split("\n")
        if size > LOG_TAIL_BYTES and len(pieces) > 1:
            pieces = pieces[1:]  # the first is the end of a line that started before the window
        last = pieces.pop()
        lines.extend(piece + "\n" for piece in pieces)
        if last:
            lines.append(last)
    return LogTail(path.stem, len(lines), "".join(lines))
