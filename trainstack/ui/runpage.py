"""A run's page: outcome and reason, description, parameters, resources, bindings and outputs,
the recovery history with its timeline, the metrics spec's charts (images the chart routes
draw), idle warnings and each replica's usage, cost, and one replica at a time: its log and its
usage chart, picked from the run's replicas, the one that failed the run first; a deployed
run's live status (trainstack.ui.deployed). Everything is computed here; the template lays it
out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

from trainstack.errors import UserError
from trainstack.humanize import human_bytes
from trainstack.logview import plain
from trainstack.metrics import htmlreport
from trainstack.metrics.htmlreport import Mark
from trainstack.metrics.podtimes import PodTimes
from trainstack.metrics.usage import ReplicaUsage
from trainstack.registry.model import Restart, RunKind, RunRecord
from trainstack.ui import logs
from trainstack.ui.deployed import Live, live, pod_log
from trainstack.ui.views import Link, Option, run_href, status_of, url, when

# The system-line filter's choices, as `trainstack logs` has them: --system, --no-system.
SYSTEM_CHOICES = {"": None, "only": True, "hide": False}
_SYSTEM_TEXT = {"": "all lines", "only": "only trainstack's", "hide": "without trainstack's"}


@dataclass(frozen=True)
class Chart:
    title: str
    src: str


@dataclass(frozen=True)
class TimelineMark:
    """A restart on the timeline, labelled beside its mark: when, which replica, why."""

    left: float  # % of the run's duration
    top: int  # where its line starts, px from the top
    title: str  # its tooltip: when, which replica, why
    y: int  # its label's baseline (its own row)
    anchor: str  # "start" (the label right of the mark) or "end", so it stays inside the chart
    dx: int
    text: str  # the label ("": past TIMELINE_LABELS, a mark only)


TIMELINE_LABELS = 20  # more restarts are marks only; the table under the timeline has them all
_ROW = 16


def timeline(marks: tuple[Mark, ...]) -> tuple[tuple[TimelineMark, ...], int]:
    """The marks and the axis' y: each label on a row of its own, so that restarts close in
    time do not write over each other."""
    rows = min(len(marks), TIMELINE_LABELS)
    out = []
    for i, m in enumerate(marks):
        right = m.left <= 50
        y = _ROW * (i + 1) if i < rows else _ROW * rows
        text = m.title if i < rows else ""
        out.append(
            TimelineMark(
                m.left, y - 10, m.title, y, "start" if right else "end", 4 if right else -4, text
            )
        )
    return tuple(out), _ROW * (rows + 1)


@dataclass(frozen=True)
class LogPanel:
    replicas: tuple[Link, ...]
    replica: str
    search: str
    system: tuple[Option, ...]  # trainstack's own lines: shown, only, hidden (`logs --system`)
    filtered: bool  # a search or the system-line filter: `matches` shown, not the tail
    lines: tuple[str, ...]  # the tail, or the pod log's
    matches: tuple[tuple[int, tuple[logs.Segment, ...]], ...]  # (line number, its pieces)
    shown: str  # what part of the log is shown
    whole_href: str
    download_href: str
    all_href: str
    follow_href: str  # "" unless the run is running (then the page's script follows)
    offset: int
    note: str


@dataclass(frozen=True)
class RunPage:
    title: str
    run_id: str
    status: str
    description: str
    outcome: tuple[tuple[str, str], ...]
    tags: tuple[str, ...]
    parameters: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str], ...]
    recovery: tuple[tuple[str, ...], ...]
    marks: tuple[TimelineMark, ...]
    axis_y: int  # the timeline's axis; the chart is 8 px taller
    metric_rows: tuple[tuple[str, ...], ...]
    charts: tuple[Chart, ...]
    problems: tuple[str, ...]
    usage_rows: tuple[tuple[str, ...], ...]
    usage_charts: tuple[Chart, ...]  # the picked replica's
    idle: tuple[str, ...]
    notes: tuple[str, ...]
    logs: LogPanel
    live: Live | None
    compare_href: str


def _job_fields(job: Mapping[str, object]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(description, bindings) from training_job.json: inputs, outputs and models with URIs."""
    description = job.get("description")
    rows: list[tuple[str, str]] = []
    for what in ("inputs", "outputs"):
        found = job.get(what)
        if isinstance(found, dict):
            for name, b in sorted(found.items()):
                uri = b.get("uri") if isinstance(b, dict) else None
                rows.append((f"{what[:-1]} {name}", str(uri)))
    models = job.get("models")
    if isinstance(models, list):
        rows.extend(
            (f"model {m.get('name')}", str(m.get("uri"))) for m in models if isinstance(m, dict)
        )
    return (description if isinstance(description, str) else ""), tuple(rows)


def failed_first(r: RunRecord, keys: tuple[str, ...]) -> tuple[str, ...]:
    """`keys` with the replica the run's reason names first (the local runner's reason begins
    with the replica whose exit failed the job), then those that exited with a failure of their
    own (not stopped when the job ended), then the rest in their order."""
    reason = r.reason or ""
    failed = {e.key for e in r.exits if e.exit_code not in (None, 0) and not e.stopped}

    def rank(item: tuple[int, str]) -> tuple[int, int, int]:
        index, key = item
        # worker-1 is not named by "worker-10": a name ends where a word does
        named = re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", reason)
        if named is not None:
            return 0, named.start(), index
        return (1 if key in failed else 2), 0, index

    return tuple(key for _, key in sorted(enumerate(keys), key=rank))


def _picker_text(r: RunRecord, key: str) -> str:
    ended = next((e for e in r.exits if e.key == key), None)
    if ended is None or ended.stopped or ended.exit_code in (None, 0):
        return key
    return f"{key} ({ended.state(True)})"


def _log_panel(
    home: Path,
    r: RunRecord,
    replica: str,
    search: str,
    system: str,
    running: bool,
    on_cluster: Live | None,
) -> LogPanel:
    base = run_href(r.id)
    keys = logs.replicas(r)
    if on_cluster is not None:  # the pods the cluster shows now, else those the registry saw
        keys = tuple(row[0] for row in on_cluster.replicas) or keys
    keys = failed_first(r, keys)
    chosen = replica if replica in keys else (keys[0] if keys else "")
    links = tuple(
        Link(_picker_text(r, k), url(base, {"replica": k}) + "#logs", k == chosen) for k in keys
    )
    if system not in SYSTEM_CHOICES:
        system = ""
    choices = tuple(Option(k, v, k == system) for k, v in _SYSTEM_TEXT.items())
    filtered = bool(search or system)
    empty = LogPanel(links, chosen, search, choices, False, (), (), "", "", "", "", "", 0, "")
    if not chosen:
        why = on_cluster.note if on_cluster is not None and on_cluster.note else ""
        return replace(empty, note=why.replace("live status", "pod logs") or "no replica yet")
    log_href = f"{base}/logs/{quote(chosen, safe='')}"
    if r.kind is RunKind.CLUSTER or r.run_dir is None:
        got = pod_log(home, r, chosen)
        lines = tuple(plain(line) for line in got.lines)
        return replace(empty, lines=lines, note=got.note, shown="the pod log's last lines")
    tail = logs.tail(r, chosen)
    matches: tuple[tuple[int, tuple[logs.Segment, ...]], ...] = ()
    shown = f"{human_bytes(tail.total_bytes)}"
    if filtered:
        found = logs.search(r, chosen, search, logs.keeps(SYSTEM_CHOICES[system]))
        matches = tuple((n, logs.segments(line, search)) for n, line in found.lines)
        more = f", the last {len(found.lines)} shown" if found.count > len(found.lines) else ""
        which = f" ({_SYSTEM_TEXT[system]})" if system else ""
        shown = f"{found.count} line(s) match{which}{more}"
    elif tail.truncated:
        shown = f"the last {len(tail.lines)} lines of {shown}"
    else:
        shown = f"all {len(tail.lines)} lines ({shown})"
    return LogPanel(
        replicas=links,
        replica=chosen,
        search=search,
        system=choices,
        filtered=filtered,
        lines=() if filtered else tail.lines,
        matches=matches,
        shown=shown,
        whole_href=log_href + ".log",
        download_href=log_href + ".log?download=1",
        all_href=f"{base}/logs.zip",
        follow_href=f"{log_href}/since" if running and not filtered else "",
        offset=tail.offset,
        note=tail.problem,
    )


def _cost(
    r: RunRecord,
    history: list[Restart],
    project: Path | None,
    pods: PodTimes | None,
    notes: list[str],
    usage_series: tuple[ReplicaUsage, ...] | None = None,
) -> tuple[str | None, list[str]]:
    """The cost line and goodput ledger `runs show` gives the run (`pods`: a deployed run's;
    `usage_series`: a local run's usage as the page read it, not read again for each)."""
    from trainstack.metrics import cost
    from trainstack.metrics.podledger import ledger

    try:
        found = ledger(r, history, None, project, pods, usage_series=usage_series)
        line = cost.summary(r, None, project, pods, usage_series=usage_series)
        return line, found.lines() if found else []
    except UserError as err:
        notes.append("cost: " + err.render())
        return None, []


def _deployed_cost(
    r: RunRecord, history: list[Restart], project: Path | None, store: Path | None, notes: list[str]
) -> tuple[str | None, list[str]]:
    """A deployed run's, from its pods' lifetimes in its artifact store (trainstack.deploy
    .podrecords), where the console's machine reaches it; the page says why not otherwise."""
    from trainstack.deploy.podrecords import NOT_KEPT, Place

    place = Place.of_record(r, store)
    if place is None:
        return None, []
    if not place.reachable:
        notes.append(f"cost: not known here: {place.out_of_reach}")
        return None, []
    try:
        pods = place.read()
    except UserError as err:
        notes.append("cost: " + err.render())
        return None, []
    if pods is None:
        notes.append(f"cost: not known: {NOT_KEPT}")
        return None, []
    return _cost(r, history, project, pods, notes)


def _outcome(
    r: RunRecord, status: str, cost_text: str | None, goodput_lines: list[str]
) -> list[tuple[str, str]]:
    """The report's outcome rows (the status as the run reads now: a run whose runner is gone
    is interrupted), and where, when and by whom."""
    outcome = list(htmlreport.outcome_rows(r, cost_text, goodput_lines))
    outcome[1] = ("status", status)
    outcome.extend(
        [
            ("kind", str(r.kind)),
            ("job type", r.job_type or "-"),
            ("created", when(r.created_at)),
            ("started", when(r.started_at)),
            ("finished", when(r.finished_at)),
            ("created by", r.created_by or "-"),
        ]
    )
    if r.spec_path:
        outcome.append(("spec", r.spec_path))
    return outcome


def build(
    home: Path,
    project: Path | None,
    r: RunRecord,
    history: list[Restart],
    args: Mapping[str, str],
    store: Path | None = None,
) -> RunPage:
    status = status_of(r)
    running = not status.finished
    base = run_href(r.id)
    notes: list[str] = []
    description = ""
    bindings = tuple(sorted((f"output {k}", v) for k, v in r.outputs.items()))
    parameters = htmlreport.parameter_rows(r.parameters)
    resources: tuple[tuple[str, str], ...] = ()
    metric_rows: tuple[tuple[str, ...], ...] = ()
    charts: tuple[Chart, ...] = ()
    problems: tuple[str, ...] = ()
    usage_rows: tuple[tuple[str, ...], ...] = ()
    usage_charts: tuple[Chart, ...] = ()
    usage_of: set[str] = set()
    idle: tuple[str, ...] = ()
    cost_text = None
    goodput_lines: list[str] = []
    live_status = None
    if r.kind is RunKind.LOCAL and r.run_dir is not None:
        from trainstack.metrics.runview import training_job
        from trainstack.ui.charts import run_view

        if not r.run_dir.is_dir():
            notes.append(f"the run directory {r.run_dir} no longer exists")
        v = run_view(r)
        description, found = _job_fields(training_job(r.run_dir))
        bindings = found or bindings
        parameters = htmlreport.parameter_rows(v.parameters) or parameters
        resources = tuple(sorted(v.resources.items()))
        metric_rows = htmlreport.metric_rows(v.values)
        charts = tuple(
            Chart(c.chart.name, f"{base}/charts/{i}.png") for i, c in enumerate(v.metrics.charts)
        )
        problems = tuple(p.render() for p in v.metrics.problems)
        usage_rows = htmlreport.usage_rows(v.usage)
        usage_of = {u.replica for u in v.usage}
        idle = tuple(w.render() for w in v.idle)
        cost_text, goodput_lines = _cost(r, history, project, None, notes, v.usage)
    else:
        live_status = live(home, r)
        cost_text, goodput_lines = _deployed_cost(r, history, project, store, notes)
    outcome = _outcome(r, str(status), cost_text, goodput_lines)
    panel = _log_panel(
        home,
        r,
        args.get("replica", ""),
        args.get("search", "").strip(),
        args.get("system", ""),
        running,
        live_status,
    )
    # One replica's usage at a time: a run of 32 replicas drew 32 charts, one under another.
    if panel.replica in usage_of:
        src = f"{base}/usage/{quote(panel.replica, safe='')}.png"
        usage_charts = (Chart(f"usage {panel.replica}", src),)
    marks, axis_y = timeline(htmlreport.marks(r, history))
    return RunPage(
        title=f"run {r.id}",
        run_id=r.id,
        status=str(status),
        description=description,
        outcome=tuple(outcome),
        tags=tuple(f"{k}={v}" for k, v in sorted(r.tags.items())),
        parameters=parameters,
        resources=resources,
        bindings=bindings,
        recovery=tuple(htmlreport.recovery_row(h) for h in history),
        marks=marks,
        axis_y=axis_y,
        metric_rows=metric_rows,
        charts=charts,
        problems=problems,
        usage_rows=usage_rows,
        usage_charts=usage_charts,
        idle=idle,
        notes=tuple(notes),
        logs=panel,
        live=live_status,
        compare_href=url("/compare", {"run": [r.id]}),
    )
