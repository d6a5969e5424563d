"""One local run as the metrics verbs see it: its checked metrics, their values, its usage, idle
warnings, and the parameters and resources its contract recorded (training_job.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from trainstack import boundedjson
from trainstack.contract.rundir import RunDir
from trainstack.errors import UserError
from trainstack.metrics import series, usage
from trainstack.metrics.idle import IdleThresholds, IdleWarning, detect_in
from trainstack.metrics.usage import ReplicaUsage
from trainstack.metrics.values import MetricValue, values
from trainstack.registry.model import RunRecord
from trainstack.regularfile import read_within


@dataclass(frozen=True)
class RunView:
    record: RunRecord
    run_dir: Path | None  # None: a deployed run, whose files are not on this machine
    metrics: series.Metrics
    values: tuple[MetricValue, ...]
    usage: tuple[ReplicaUsage, ...]
    idle: tuple[IdleWarning, ...]
    parameters: Mapping[str, object]
    resources: Mapping[str, str]  # role → "2 × 1 CPU, 2Gi memory"


def run_dir(record: RunRecord) -> Path:
    if record.run_dir is None:
        raise UserError(
            f"run {record.id} ran on a cluster; its metrics are not on this machine",
            hint="metrics, charts and reports are for local runs",
        )
    return record.run_dir


def view(record: RunRecord, thresholds: IdleThresholds | None = None) -> RunView:
    root = run_dir(record)
    metrics = series.read(RunDir(root).metrics, root=root)
    used = usage.with_unsampled(
        usage.read(RunDir(root).usage, root=root),
        [f"{e.role}-{e.index}" for e in record.exits],
    )
    job = training_job(root)
    params = job.get("hyperparameters")
    return RunView(
        record,
        root,
        metrics,
        tuple(values(metrics)),
        used,
        detect_in(used, thresholds or IdleThresholds.from_env()),
        MappingProxyType(dict(params) if isinstance(params, dict) else {}),
        MappingProxyType(_resources(job.get("resources"))),
    )


def deployed_view(record: RunRecord) -> RunView:
    """A deployed run as the report sees it: its record (and, beside it, its cost and recovery
    history); its metrics, usage and logs are in its pods and the artifact store, not here."""
    from trainstack.metrics.spec import MetricsSpec

    nowhere = Path()
    spec = MetricsSpec(nowhere, nowhere, record.id, (), ())
    empty: Mapping[str, str] = MappingProxyType({})
    return RunView(record, None, series.Metrics(spec, (), ()), (), (), (), empty, empty)


def training_job(root: Path) -> dict[str, object]:
    """The run's `training_job.json` (the contract's whole job), `{}` when unreadable."""
    try:
        doc = boundedjson.loads(read_within(root, RunDir(root).training_job))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _resources(res: object) -> dict[str, str]:
    if not isinstance(res, dict):
        return {}
    out = {}
    for role, r in sorted(res.items()):
        if not isinstance(r, dict):
            continue
        parts = [
            f"{r.get('cpu')} CPU" if r.get("cpu") else "",
            f"{r.get('memory')} memory" if r.get("memory") else "",
            f"{r.get('gpu')} GPU" if r.get("gpu") else "",
        ]
        each = ", ".join(p for p in parts if p) or "no requests"
        out[str(role)] = f"{r.get('replicas', 1)} × {each}"
    return out
