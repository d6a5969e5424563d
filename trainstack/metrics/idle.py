"""Idle warnings (after the resource-utilisation warning of Huawei ModelArts training jobs): a
replica whose GPUs — or CPU, when it has no GPU — stay below a threshold for a sustained stretch.

Thresholds come from the environment so a team can set them once:
TRAINSTACK_IDLE_GPU_PERCENT (default 10), TRAINSTACK_IDLE_CPU_PERCENT (default 10, percent of
one core, summed over the replica's processes) and TRAINSTACK_IDLE_SECONDS (default 300).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.envnames import IDLE_CPU_ENV as ENV_CPU
from trainstack.envnames import IDLE_GPU_ENV as ENV_GPU
from trainstack.envnames import IDLE_SECONDS_ENV as ENV_SECONDS
from trainstack.errors import UserError
from trainstack.metrics.usage import ReplicaUsage, samples, series, span

if TYPE_CHECKING:
    from trainstack.metrics.usage import Floats


@dataclass(frozen=True)
class IdleThresholds:
    gpu_percent: float = 10.0
    cpu_percent: float = 10.0
    seconds: float = 300.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IdleThresholds:
        env = os.environ if env is None else env
        base = cls()
        return cls(
            _number(env, ENV_GPU, base.gpu_percent),
            _number(env, ENV_CPU, base.cpu_percent),
            _number(env, ENV_SECONDS, base.seconds),
        )


@dataclass(frozen=True)
class IdleWarning:
    replica: str
    resource: str  # "GPU 0", "CPU"
    threshold: float
    seconds: float  # the longest stretch below the threshold
    start: float  # its start, in seconds since the run's first sample

    def render(self) -> str:
        return (
            f"{self.replica}: {self.resource} below {self.threshold:g}% for "
            f"{self.seconds:.0f}s (from {self.start:.0f}s into the run)"
        )


def detect(
    path: Path, thresholds: IdleThresholds, *, root: Path | None = None
) -> tuple[IdleWarning, ...]:
    found = samples(path, root=root)
    if span(found) < thresholds.seconds:
        # No stretch can be as long as the threshold: said without building the series, whose
        # numpy import was a third of a second of every short local run's end.
        return ()
    return detect_in(series(found), thresholds)


def detect_in(
    usage: tuple[ReplicaUsage, ...], thresholds: IdleThresholds
) -> tuple[IdleWarning, ...]:
    out = []
    for rep in usage:
        if rep.gpus:
            for g in rep.gpus:
                found = _stretch(g.t, g.util_percent, thresholds.gpu_percent)
                if found and found[1] >= thresholds.seconds:
                    out.append(
                        IdleWarning(
                            rep.replica,
                            f"GPU {g.index}",
                            thresholds.gpu_percent,
                            found[1],
                            found[0],
                        )
                    )
        else:
            found = _stretch(rep.t, rep.cpu_percent, thresholds.cpu_percent)
            if found and found[1] >= thresholds.seconds:
                out.append(
                    IdleWarning(rep.replica, "CPU", thresholds.cpu_percent, found[1], found[0])
                )
    return tuple(out)


def _stretch(t: Floats, values: Floats, threshold: float) -> tuple[float, float] | None:
    """(start, length) of the longest run of consecutive samples below `threshold`."""
    best: tuple[float, float] | None = None
    start: float | None = None
    below = values < threshold
    for i in range(len(t)):
        if below[i]:
            if start is None:
                start = float(t[i])
            length = float(t[i]) - start
            if best is None or length > best[1]:
                best = (start, length)
        else:
            start = None
    return best


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise UserError(f"${name}={text!r}: expected a number of at least 0")
    return value
