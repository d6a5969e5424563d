"""What a run cost: resource-time (requested resources × wall time, per replica) and, where the
environment sets rates, money. Rates are the environment's `trainstack:costs` (Pulumi.<env>.yaml):

    trainstack:costs:
      currency: CNY
      vcpuHour: 0.12            # per vCPU-hour requested
      memoryGiBHour: 0.01       # per GiB-hour of memory requested (optional)
      gpuHour: {default: 8.0, A10: 10.5}   # per GPU-hour, by GPU model (or one number)

A run's environment is `--env`, else its `env` tag (the shipped examples tag their runs so),
else the environment of its stack (`<env>.<namespace>.<run>`); without one, resource-time is
shown without a price. A deployed run's resource-time is its pods' lifetimes × their requests
(trainstack.metrics.podtimes), read from the artifact store by the caller. The idle share is
the part of the replicas' time inside the stretches the idle warnings found
(trainstack.metrics.idle), so it is a lower bound; a deployed run has none (nothing samples it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack import boundedjson
from trainstack.contract.rundir import RunDir
from trainstack.errors import UserError
from trainstack.metrics.podtimes import PodTimes
from trainstack.registry.model import RunRecord
from trainstack.regularfile import read_within

if TYPE_CHECKING:
    from trainstack.metrics.usage import ReplicaUsage

COSTS_KEY = "trainstack:costs"
_GIB = float(1 << 30)


@dataclass(frozen=True)
class Rates:
    currency: str
    vcpu_hour: float = 0.0
    memory_gib_hour: float = 0.0
    gpu_hour: Mapping[str, float] | None = None  # GPU model (or "default") → rate
    env: str = ""

    def gpu_rate(self, model: str | None = None) -> float:
        table = self.gpu_hour or {}
        if model and model in table:
            return table[model]
        if "default" in table:
            return table["default"]
        return next(iter(table.values())) if len(table) == 1 else 0.0


@dataclass(frozen=True)
class ResourceTime:
    seconds: float  # the run's wall time
    vcpu_seconds: float
    memory_gib_seconds: float
    gpu_seconds: float  # requested
    gpu_used_seconds: float | None  # NVML's utilisation integrated over time, where sampled
    idle_share: float | None  # 0..1; None where nothing sampled usage (a deployed run)

    def text(self) -> str:
        parts = [f"{self.vcpu_seconds / 3600:.2f} vCPU-h"]
        if self.gpu_seconds:
            used = (
                f" ({self.gpu_used_seconds / 3600:.2f} used)"
                if self.gpu_used_seconds is not None
                else ""
            )
            parts.append(f"{self.gpu_seconds / 3600:.2f} GPU-h{used}")
        if self.memory_gib_seconds:
            parts.append(f"{self.memory_gib_seconds / 3600:.1f} GiB-h")
        return ", ".join(parts)


def price(rt: ResourceTime, rates: Rates) -> float:
    return (
        rt.vcpu_seconds / 3600 * rates.vcpu_hour
        + rt.memory_gib_seconds / 3600 * rates.memory_gib_hour
        + rt.gpu_seconds / 3600 * rates.gpu_rate()
    )


def cost_text(rt: ResourceTime | None, rates: Rates | None) -> str:
    if rt is None:
        return "-"
    if rates is None:
        return "no rate"
    return f"{rates.currency} {price(rt, rates):.2f}"


def parse_rates(raw: object, env: str, where: str) -> Rates:
    """`trainstack:costs` as Pulumi config holds it (a JSON text, or the object)."""
    data = raw
    if isinstance(raw, str):
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
    if not isinstance(data, dict):
        raise UserError(f"{where}: {COSTS_KEY}: expected a mapping such as {{currency: CNY, ...}}")
    currency = data.get("currency")
    if not isinstance(currency, str) or not currency.strip():
        raise UserError(f"{where}: {COSTS_KEY}.currency: expected a currency such as CNY or USD")
    unknown = sorted(set(data) - {"currency", "vcpuHour", "memoryGiBHour", "gpuHour"})
    if unknown:
        raise UserError(
            f"{where}: {COSTS_KEY}.{unknown[0]}: not a rate trainstack knows",
            hint="rates: vcpuHour, memoryGiBHour, gpuHour (a number, or {model: rate})",
        )
    gpu = data.get("gpuHour")
    table: dict[str, float] = {}
    if isinstance(gpu, dict):
        table = {str(k): _rate(v, f"{where}: {COSTS_KEY}.gpuHour.{k}") for k, v in gpu.items()}
    elif gpu is not None:
        table = {"default": _rate(gpu, f"{where}: {COSTS_KEY}.gpuHour")}
    return Rates(
        currency=currency.strip(),
        vcpu_hour=_rate(data.get("vcpuHour", 0), f"{where}: {COSTS_KEY}.vcpuHour"),
        memory_gib_hour=_rate(data.get("memoryGiBHour", 0), f"{where}: {COSTS_KEY}.memoryGiBHour"),
        gpu_hour=table,
        env=env,
    )


def _rate(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}: expected a number (a price per hour), got {value!r}")
    if value < 0:
        raise UserError(f"{where}: a rate cannot be negative ({value!r})")
    return float(value)


def rates_for(project: Path | None, env: str | None, *, strict: bool = True) -> Rates | None:
    """The environment's rates; None when it sets none (or there is no environment). Not
    `strict` (an environment guessed from a tag): no project or no such environment is None."""
    if not env:
        return None
    from trainstack.envfile import find_project, read_env

    try:
        cfg = read_env(find_project(project), env)
    except UserError:
        if strict:
            raise
        return None
    raw = cfg.values.get(COSTS_KEY)
    return None if raw is None else parse_rates(raw, env, cfg.source)


def run_env(record: RunRecord, given: str | None) -> str | None:
    if given:
        return given
    if record.tags.get("env"):
        return record.tags["env"]
    if record.stack_name and "." in record.stack_name:
        return record.stack_name.split(".", 1)[0]
    return None


def resource_time(
    record: RunRecord,
    pods: PodTimes | None = None,
    *,
    usage_series: tuple[ReplicaUsage, ...] | None = None,
) -> ResourceTime | None:
    """Requested resources × the run's wall time, per replica (a local run: from its
    training_job.json and usage.jsonl, or `usage_series` when the caller has read it already; a
    deployed run: from its pods' lifetimes, `pods`); None when unknown (no run directory, never
    started, no pod lifetimes recorded)."""
    if pods is not None:
        return pods_resource_time(pods)
    if record.run_dir is None or record.duration is None:
        return None
    root = record.run_dir
    try:
        job = boundedjson.loads(read_within(root, RunDir(root).training_job))
    except (OSError, ValueError):
        return None
    res = job.get("resources") if isinstance(job, dict) else None
    if not isinstance(res, dict):
        return None
    from trainstack.spec.values import quantity

    wall = record.duration
    vcpu = mem = gpu = replicas = 0.0
    for r in res.values():
        if not isinstance(r, dict):
            continue
        n = r.get("replicas", 1)
        n = n if isinstance(n, int) and not isinstance(n, bool) else 1
        replicas += n
        try:
            vcpu += n * (quantity(str(r["cpu"])).value if r.get("cpu") else 0.0)
            mem += n * (quantity(str(r["memory"])).value / _GIB if r.get("memory") else 0.0)
        except ValueError:
            continue
        g = r.get("gpu")
        gpu += n * (g if isinstance(g, int) and not isinstance(g, bool) else 0)
    used, idle = _usage(root, wall * max(replicas, 1.0), usage_series)
    return ResourceTime(wall, vcpu * wall, mem * wall, gpu * wall, used if gpu else None, idle)


def pods_resource_time(pods: PodTimes) -> ResourceTime | None:
    """A deployed run's: each pod's requests × its lifetime (trainstack.metrics.podtimes); its
    wall time from the first pod scheduled to the last one's end (or last sight)."""
    if not pods.pods:
        return None
    start = min(p.scheduled for p in pods.pods)
    wall = max(p.until for p in pods.pods) - start
    return ResourceTime(
        seconds=max(0.0, wall),
        vcpu_seconds=sum(p.cpu * p.seconds for p in pods.pods),
        memory_gib_seconds=sum(p.memory_gib * p.seconds for p in pods.pods),
        gpu_seconds=sum(p.gpu * p.seconds for p in pods.pods),
        gpu_used_seconds=None,
        idle_share=None,
    )


def _usage(
    root: Path, replica_seconds: float, series: tuple[ReplicaUsage, ...] | None
) -> tuple[float | None, float]:
    """(GPU-seconds used per NVML, idle share) from usage.jsonl; (None, 0) without samples."""
    from trainstack.metrics import usage
    from trainstack.metrics.idle import IdleThresholds, detect_in

    if series is None:
        try:
            series = usage.read(RunDir(root).usage, root=root)
        except UserError:
            return None, 0.0
    used: float | None = None
    for u in series:
        for g in u.gpus:
            if len(u.t) > 1:
                dt = float(u.t[-1] - u.t[0]) / (len(u.t) - 1)
                used = (used or 0.0) + float(g.util_percent.sum()) / 100 * dt
    idle = sum(w.seconds for w in detect_in(series, IdleThresholds.from_env()))
    share = min(1.0, idle / replica_seconds) if replica_seconds > 0 else 0.0
    return used, share


def summary(
    record: RunRecord,
    env: str | None = None,
    project: Path | None = None,
    pods: PodTimes | None = None,
    *,
    usage_series: tuple[ReplicaUsage, ...] | None = None,
) -> str | None:
    """One line for `runs show`, the report and compare: resource-time, cost, idle share (a
    deployed run: the pods' lifetimes instead, since nothing samples its usage)."""
    rt = resource_time(record, pods, usage_series=usage_series)
    if rt is None:
        return None
    name = run_env(record, env)
    rates = rates_for(project, name, strict=env is not None) if name else None
    where = f" at {rates.env}'s rates" if rates else " (no rates: set trainstack:costs)"
    return f"{rt.text()}; {cost_text(rt, rates)}{where}; {_idle_or_pods(rt, pods)}"


def _idle_or_pods(rt: ResourceTime, pods: PodTimes | None) -> str:
    if rt.idle_share is not None:
        return f"idle {rt.idle_share:.0%}"
    lives = pods.pods if pods is not None else ()
    running = sum(1 for p in lives if p.ended is None)
    tail = f", {running} still running (counted until last seen)" if running else ""
    return f"from {len(lives)} pod lifetime(s){tail}"


@dataclass(frozen=True)
class Priced:
    """One run's resource-time and the rates it is priced at (either may be unknown)."""

    rt: ResourceTime | None
    rates: Rates | None

    @property
    def amount(self) -> float | None:
        return price(self.rt, self.rates) if self.rt and self.rates else None

    def cells(self) -> tuple[str, str, str]:
        """(resource-time, cost, idle share) as `runs list --cost`, `runs compare` and
        `sweeps show` show them."""
        rt = self.rt
        return (
            rt.text() if rt else "-",
            cost_text(rt, self.rates),
            f"{rt.idle_share:.0%}" if rt and rt.idle_share is not None else "-",
        )


def priced(
    records: Sequence[RunRecord],
    env: str | None,
    project: Path | None,
    pods: Mapping[str, PodTimes] | None = None,
) -> dict[str, Priced]:
    """Each run (by id) with its resource-time, at `env`'s rates or else its own environment's
    (run_env); each environment's rates are read once. An explicit `env` must exist; one read
    off a run's tag or stack may not be in this project. `pods`: deployed runs' pod lifetimes,
    by run id."""
    lives = pods or {}
    rates: dict[str, Rates | None] = {}
    out: dict[str, Priced] = {}
    for r in records:
        name = run_env(r, env)
        if name is not None and name not in rates:
            rates[name] = rates_for(project, name, strict=name == env)
        out[r.id] = Priced(resource_time(r, lives.get(r.id)), rates.get(name) if name else None)
    return out


def total_text(runs: Sequence[Priced]) -> str:
    """The sum of several runs' costs, e.g. for a sweep: "CNY 12.40 (3 of 4 runs priced)"."""
    amounts = [(p.rates.currency, p.amount) for p in runs if p.rates and p.amount is not None]
    if not amounts:
        return "no rate" if any(p.rt for p in runs) else "-"
    currencies = {c for c, _ in amounts}
    if len(currencies) > 1:
        return "mixed currencies: " + ", ".join(sorted(currencies))
    total = sum(a for _, a in amounts)
    return f"{amounts[0][0]} {total:.2f} ({len(amounts)} of {len(runs)} runs priced)"
