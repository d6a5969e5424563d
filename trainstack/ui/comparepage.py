"""The compare page: the runs picked on the runs page, their status, cost, parameters,
resources and metrics side by side (trainstack.metrics.compare's rows), and one metric of each
on one chart (its image route draws compare's overlay)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainstack.errors import NotFoundError, UserError
from trainstack.metrics.runview import RunView
from trainstack.ui import queries
from trainstack.ui.views import Link, Option, run_href, url

MAX_RUNS = 12


@dataclass(frozen=True)
class ComparePage:
    title: str
    runs: tuple[Link, ...]
    run_ids: tuple[str, ...]
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    metrics: tuple[Option, ...]
    chart_src: str
    chart_title: str
    problems: tuple[str, ...]


def views(conn: sqlite3.Connection, ids: Sequence[str]) -> tuple[list[RunView], list[str]]:
    """The local runs among `ids` as metrics views; why each other one is left out."""
    from trainstack.ui.charts import run_view

    found: list[RunView] = []
    problems: list[str] = []
    for run_id in list(dict.fromkeys(ids))[:MAX_RUNS]:
        try:
            record = queries.get(conn, run_id)
        except NotFoundError as err:
            problems.append(err.message)
            continue
        if record.run_dir is None:
            problems.append(f"run {run_id} ran on a cluster: its metrics are not on this machine")
            continue
        found.append(run_view(record))
    if len(ids) > MAX_RUNS:
        problems.append(f"only the first {MAX_RUNS} runs are compared")
    return found, problems


def build(
    conn: sqlite3.Connection, project: Path | None, ids: Sequence[str], metric: str
) -> ComparePage:
    from trainstack.metrics import compare, cost

    found, problems = views(conn, ids)
    ids_kept = tuple(v.record.id for v in found)
    if len(found) < 2:
        problems.append("pick two runs or more on the runs page (the compare column) to compare")
    costs = None
    try:
        priced = cost.priced([v.record for v in found], None, project)
        costs = {k: p.cells() for k, p in priced.items()}
    except UserError as err:
        problems.append("cost: " + err.render())
    table = compare.rows(found, costs) if found else [("",)]
    names = list(dict.fromkeys(m.id for v in found for m in v.values))
    chosen = (
        metric
        if metric in names
        else next((n for n in names if all(any(m.id == n for m in v.values) for v in found)), "")
    )
    chart_src = (
        url("/compare/chart.png", {"run": list(ids_kept), "metric": chosen})
        if chosen and found
        else ""
    )
    return ComparePage(
        title="compare runs",
        runs=tuple(Link(i, run_href(i)) for i in ids_kept),
        run_ids=ids_kept,
        header=table[0],
        rows=tuple(table[1:]),
        metrics=tuple(Option(n, n, n == chosen) for n in names),
        chart_src=chart_src,
        chart_title=f"{chosen} across {len(found)} runs" if chosen else "",
        problems=tuple(problems),
    )
