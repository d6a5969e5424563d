"""What a local run left behind, for people: the end-of-run summary and `trainstack runs show`."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack import boundedjson, recovery
from trainstack.contract import layout as tree
from trainstack.errors import UserError
from trainstack.excerpt import printable
from trainstack.humanize import human_bytes, human_seconds
from trainstack.local.sandbox import Layout, tree_size
from trainstack.local.usage import UsageSummary, summarize
from trainstack.logfiles import chain
from trainstack.registry.model import Restart, RunRecord, RunStatus
from trainstack.regularfile import read_within

if TYPE_CHECKING:
    # Imported where used: `runs list` and `logs` need this module but not numpy.
    from trainstack.errors import Diagnostic
    from trainstack.local.runner import LocalRunResult
    from trainstack.metrics.goodput import Ledger
    from trainstack.metrics.idle import IdleThresholds, IdleWarning
    from trainstack.metrics.values import MetricValue


@dataclass(frozen=True)
class OutputInfo:
    channel: str
    path: Path
    files: int
    bytes: int
    bound_to: str | None  # the binding's URI, when the output is committed somewhere


@dataclass(frozen=True)
class LogInfo:
    replica: str
    path: Path
    bytes: int


@dataclass(frozen=True)
class RunDetails:
    record: RunRecord
    outputs: tuple[OutputInfo, ...]
    logs: tuple[LogInfo, ...]
    metrics_dir: Path | None
    charts: tuple[str, ...]
    usage: tuple[UsageSummary, ...]
    metric_values: tuple[MetricValue, ...] = ()
    metric_problems: tuple[Diagnostic, ...] = ()
    idle: tuple[IdleWarning, ...] = ()
    history: tuple[Restart, ...] = ()  # the recovery history (registry), oldest first
    cost: str | None = None  # resource-time, cost and idle share (trainstack.metrics.cost)
    goodput: Ledger | None = None  # where the wall time went (trainstack.metrics.goodput)


def details(
    record: RunRecord,
    thresholds: IdleThresholds | None = None,
    history: Sequence[Restart] = (),
) -> RunDetails:
    if record.run_dir is None:
        return RunDetails(record, (), (), None, (), (), history=tuple(history))
    layout = Layout(record.run_dir)
    bound = _bound_outputs(layout)
    outputs = []
    out_root = layout.root / tree.OUTPUT
    if out_root.is_dir():
        for channel_dir in sorted(p for p in out_root.iterdir() if p.is_dir()):
            files, size = tree_size(channel_dir)
            uri = bound.get(channel_dir.name)
            if uri is not None and _same_dir(uri, channel_dir):
                uri = None  # kept in the run directory, not committed elsewhere
            outputs.append(OutputInfo(channel_dir.name, channel_dir, files, size, uri))
    logs = (
        tuple(
            LogInfo(p.stem, p, sum(part.lstat().st_size for part in chain(p)))
            for p in sorted(layout.logs.glob("*.log"))
        )
        if layout.logs.is_dir()
        else ()
    )
    from trainstack.metrics import series
    from trainstack.metrics.idle import IdleThresholds, detect
    from trainstack.metrics.values import values

    metrics = series.read(layout.metrics, root=layout.root)
    return RunDetails(
        record,
        tuple(outputs),
        logs,
        layout.metrics,
        tuple(c.name for c in metrics.spec.charts),
        tuple(summarize(layout.usage, root=layout.root)),
        tuple(values(metrics)),
        metrics.problems,
        detect(layout.usage, thresholds or IdleThresholds.from_env(), root=layout.root),
        tuple(history),
    )


def summary(result: LocalRunResult) -> str:
    rec = result.record
    took = f" in {human_seconds(rec.duration)}" if rec.duration is not None else ""
    restarts = f", {rec.restarts} restart(s)" if rec.restarts else ""
    lines = [f"run {rec.id} {rec.status}{took}{restarts}"]
    if rec.reason:
        lines.append(f"  reason:   {rec.reason}")
    failed = rec.status is not RunStatus.SUCCEEDED
    if failed:
        from trainstack.local.missingmodule import missing_modules

        logs = result.layout.logs.glob("*-*.log")
        for m in missing_modules(logs, result.layout.root, result.component_dir):
            lines.append(
                f"  missing:  Python module {m.module!r} ({', '.join(m.replicas)}): {m.hint}"
            )
    committed = {c.channel: c for c in result.committed}
    for channel in sorted(p.name for p in (result.layout.root / tree.OUTPUT).glob("*")):
        if channel in committed and failed and not committed[channel].files:
            lines.append(
                f"  output:   {channel}: not committed (the run {rec.status}, nothing written)"
            )
        elif channel in committed:
            c = committed[channel]
            partial = f"; written before the run {rec.status}" if failed else ""
            lines.append(
                f"  output:   {channel} → {c.destination} "
                f"({c.files} file(s), {human_bytes(c.bytes)}{partial})"
            )
        else:
            files, size = tree_size(result.layout.output_dir(channel))
            lines.append(
                f"  output:   {channel} → {result.layout.output_dir(channel)} "
                f"({files} file(s), {human_bytes(size)})"
            )
    if result.sandbox is not None:
        lines.append(f"  sandbox:  {result.sandbox.describe()}")
    lines.append(f"  logs:     {result.layout.logs}  (trainstack logs {rec.id})")
    lines.extend(_metrics_summary(rec.id, result.layout))
    lines.append(f"  details:  trainstack runs show {rec.id}")
    # Reasons and paths may hold what no validation saw (file names): escaped, never obeyed.
    return _shown("\n".join(lines))


def render(d: RunDetails) -> str:
    from trainstack.metrics.table import value_text

    r = d.record
    rows: list[tuple[str, str]] = [
        ("run", f"{r.id}  ({r.name})"),
        ("status", str(r.status) + (f": {r.reason}" if r.reason else "")),
        (
            "component",
            f"{r.component}@{r.component_version}" + (f" ({r.job_type})" if r.job_type else ""),
        ),
        ("kind", str(r.kind) + (f", stack {r.stack_name}" if r.stack_name else "")),
    ]
    if r.experiment:
        rows.append(("experiment", r.experiment))
    if r.tags:
        rows.append(("tags", ", ".join(f"{k}={v}" for k, v in sorted(r.tags.items()))))
    if r.parameters:
        rows.append(
            ("parameters", ", ".join(f"{k}={json.dumps(v)}" for k, v in r.parameters.items()))
        )
    rows.append(("created", _when(r.created_at)))
    if r.started_at is not None:
        rows.append(("started", _when(r.started_at)))
    if r.finished_at is not None:
        took = f" (took {human_seconds(r.duration)})" if r.duration is not None else ""
        rows.append(("finished", _when(r.finished_at) + took))
    counted = sum(1 for h in d.history if h.counted)
    rows.append(
        (
            "restarts",
            str(r.restarts)
            + (f" ({counted} counted against maxRestarts)" if counted != r.restarts else ""),
        )
    )
    rows.extend(("restart", recovery.describe(h)) for h in d.history)
    if d.cost:
        rows.append(("cost", d.cost))
    if d.goodput:
        rows.extend(("goodput", line) for line in d.goodput.lines())
    if r.resumed_from:
        rows.append(("resumed from", r.resumed_from))
    rows.extend(("replica", f"{e.key}: {e.state(r.status.finished)}") for e in r.exits)
    if r.run_dir is not None:
        missing = r.status.finished and not r.run_dir.is_dir()
        gone = "  (no longer exists: deleted or moved)" if missing else ""
        rows.append(("run dir", f"{r.run_dir}{gone}"))
    shown = {o.channel for o in d.outputs}
    for channel, uri in r.outputs.items():  # recorded at deploy: where a cluster run writes
        if channel not in shown:
            rows.append(("output", f"{channel}: {uri}"))
    for o in d.outputs:
        where = f" → {o.bound_to}" if o.bound_to else ""
        rows.append(
            ("output", f"{o.channel}: {o.path} ({o.files} file(s), {human_bytes(o.bytes)}){where}")
        )
    for log in d.logs:
        rows.append(("log", f"{log.replica}: {log.path} ({human_bytes(log.bytes)})"))
    if d.metrics_dir is not None:
        charts = f" (charts: {', '.join(d.charts)})" if d.charts else " (none written)"
        rows.append(("metrics", f"{d.metrics_dir}{charts}"))
    rows.extend(("metric", f"{v.id}: {value_text(v)}") for v in d.metric_values)
    rows.extend(("problem", p.render()) for p in d.metric_problems)
    rows.extend(("idle", w.render()) for w in d.idle)
    for u in d.usage:
        gpu = ""
        if u.gpu_util_mean is not None and u.gpu_mem_max is not None:
            gpu = f", GPU {u.gpu_util_mean:.0f}% mean, {human_bytes(u.gpu_mem_max)} max"
        rows.append(
            (
                "usage",
                f"{u.replica}: CPU {u.cpu_mean:.0f}% mean / {u.cpu_max:.0f}% "
                f"max, memory {human_bytes(u.rss_max)} max{gpu} "
                f"({u.samples} samples)",
            )
        )
    width = max(len(k) for k, _ in rows)
    # A record may come from an older or foreign writer, or hold what the runner composed from
    # file names: control characters are escaped, never sent to the terminal.
    return "\n".join(f"{k.ljust(width)}  {_shown(v)}" for k, v in rows)


def _shown(text: str) -> str:
    """`text` with control characters escaped, line breaks kept (a problem's hint line)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def to_json(d: RunDetails) -> dict[str, Any]:
    r = d.record
    rec = {
        "id": r.id,
        "name": r.name,
        "component": r.component,
        "component_version": r.component_version,
        "kind": str(r.kind),
        "job_type": r.job_type,
        "experiment": r.experiment,
        "tags": dict(r.tags),
        "status": str(r.status),
        "reason": r.reason,
        "created_at": r.created_at,
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "duration": r.duration,
        "restarts": r.restarts,
        "exits": [
            {"replica": e.key, "exit_code": e.exit_code, "stopped": e.stopped} for e in r.exits
        ],
        "run_dir": str(r.run_dir) if r.run_dir else None,
        "stack_name": r.stack_name,
        "spec_path": r.spec_path,
        "output_uris": dict(r.outputs),
        "parameters": dict(r.parameters),
        "resumed_from": r.resumed_from,
    }
    return {
        "run": rec,
        "outputs": [{**asdict(o), "path": str(o.path)} for o in d.outputs],
        "logs": [{**asdict(log), "path": str(log.path)} for log in d.logs],
        "metrics": {"dir": str(d.metrics_dir) if d.metrics_dir else None, "charts": list(d.charts)},
        "usage": [asdict(u) for u in d.usage],
        "metric_values": [{**asdict(v), "id": v.id} for v in d.metric_values],
        "metric_problems": [p.to_json() for p in d.metric_problems],
        "idle": [asdict(w) for w in d.idle],
        "restarts": [{**asdict(h), "replica": h.key} for h in d.history],
        "cost": d.cost,
        "goodput": d.goodput.to_json() if d.goodput else None,
    }


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _bound_outputs(layout: Layout) -> dict[str, str]:
    """Output bindings as the contract wrote them into training_job.json."""
    try:
        job = boundedjson.loads(read_within(layout.root, layout.training_job))
        return {str(k): str(v["uri"]) for k, v in job.get("outputs", {}).items()}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return {}


def _metrics_summary(run_id: str, layout: Layout) -> list[str]:
    """Where the charts are and how to look at them; problems and idle warnings, never fatal."""
    from trainstack.metrics.idle import IdleThresholds, detect
    from trainstack.metrics.spec import load

    spec = load(layout.metrics, root=layout.root)
    charts: list[str] = []
    problems = spec.problems
    if spec.charts:  # series files to read and check: numpy's, imported only then
        from trainstack.metrics import series

        metrics = series.read(layout.metrics, root=layout.root, spec=spec)
        charts, problems = [c.chart.name for c in metrics.charts], metrics.problems
    names = ", ".join(charts)
    lines = [f"  metrics:  {layout.metrics}" + (f" (charts: {names})" if names else "")]
    if charts or layout.usage.is_file():
        lines.append(
            f"  charts:   trainstack metrics {run_id} --png {run_id}-charts  "
            f"(report: trainstack report {run_id} -o {run_id}.html)"
        )
    lines.extend(f"  warning:  {p.render()}" for p in problems)
    try:
        idle = detect(layout.usage, IdleThresholds.from_env(), root=layout.root)
    except UserError as err:
        return [*lines, f"  warning:  idle check skipped: {err.render()}"]
    lines.extend(f"  idle:     {w.render()}" for w in idle)
    return lines


def _same_dir(uri: str, directory: Path) -> bool:
    return (
        uri.startswith("file://") and Path(uri[len("file://") :]).resolve() == directory.resolve()
    )
