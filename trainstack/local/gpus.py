"""This machine's GPUs, divided among a job's replicas as a scheduler would give them out."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuPlan:
    by_replica: Mapping[str, tuple[str, ...]]
    note: str | None  # what the user should know (no GPUs here, or GPUs shared)


def machine_gpus() -> tuple[str, ...]:
    """GPU indices visible to us: NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES if set, else all
    devices the NVIDIA management library reports (none without a driver)."""
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        value = os.environ.get(var)
        if value is not None:
            if value.strip() in ("", "none", "void"):
                return ()
            if value.strip() != "all":
                return tuple(v.strip() for v in value.split(",") if v.strip())
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library or no driver: no GPUs
        return ()
    try:
        return tuple(str(i) for i in range(int(pynvml.nvmlDeviceGetCount())))
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def assign(requests: Sequence[tuple[str, int]], available: Sequence[str]) -> GpuPlan:
    """Give each replica (key, wanted) its GPUs in order; share round-robin when short."""
    wanted = sum(n for _, n in requests)
    if wanted == 0:
        return GpuPlan({key: () for key, _ in requests}, None)
    if not available:
        note = (
            f"the run asks for {wanted} GPU(s) and this machine has none: replicas run "
            "with NVIDIA_VISIBLE_DEVICES empty"
        )
        return GpuPlan({key: () for key, _ in requests}, note)
    out: dict[str, tuple[str, ...]] = {}
    cursor = 0
    for key, n in requests:
        picked = []
        for _ in range(min(n, len(available))):
            picked.append(available[cursor % len(available)])
            cursor += 1
        out[key] = tuple(picked)
    shared: str | None = None
    if wanted > len(available):
        shared = (
            f"the run asks for {wanted} GPU(s) and this machine has {len(available)}: "
            "replicas share them"
        )
    return GpuPlan(out, shared)
