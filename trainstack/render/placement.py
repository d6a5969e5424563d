"""Where pods land: GPU nodes and tolerations, spot capacity, the scheduling policy as affinity,
priority as the platform's PriorityClass.

Scheduling (Alibaba PAI DLC: create a training job, its scheduling policy): `centralized` packs a
run's pods onto few nodes (preferred podAffinity), `spread` spreads them (preferred podAntiAffinity
plus a soft topology spread), `intelligent` packs
GPU jobs (fast NCCL within a node) and spreads CPU jobs (less contention). Preferences, not
requirements, so a busy cluster still schedules the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainstack.platformnames import GPU_RESOURCE, RUN_LABEL
from trainstack.render.options import RenderOptions
from trainstack.spec.model import Run, Scheduling

HOSTNAME = "kubernetes.io/hostname"
PRIORITY_CLASS = "trainstack-priority-{}"  # created by the platform (trainstack/platformnames.py)


@dataclass(frozen=True)
class Placement:
    node_selector: dict[str, str] | None
    tolerations: list[dict[str, Any]] | None
    affinity: dict[str, Any] | None
    spread: list[dict[str, Any]] | None


def priority_class(run: Run) -> str | None:
    return None if run.priority is None else PRIORITY_CLASS.format(run.priority)


def packs(run: Run) -> bool:
    if run.scheduling is Scheduling.INTELLIGENT:
        return run.uses_gpu
    return run.scheduling is Scheduling.CENTRALIZED


def gpu_tolerations() -> list[dict[str, Any]]:
    """What a pod that asks for GPUs tolerates: the GPU pools' taint."""
    return [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]


def spot_tolerations(options: RenderOptions) -> list[dict[str, Any]]:
    """What a preemptible run's pods tolerate: the spot pool's taint."""
    return [
        {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}
        for key, value in options.spot_node_selector.items()
    ]


def rendered_tolerations(options: RenderOptions) -> list[dict[str, Any]]:
    """Every toleration a rendered pod can carry: the platform's pod admission policy admits
    these and no other (trainstack/infra/platform/podguard.py)."""
    return gpu_tolerations() + spot_tolerations(options)


def placement(run: Run, job: str, gpu: int, options: RenderOptions) -> Placement:
    selector: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []
    if gpu > 0:
        selector.update(options.gpu_node_selector)
        tolerations += gpu_tolerations()
    node_affinity: dict[str, Any] | None = None
    if run.spot is not None:
        selector.update(options.spot_node_selector)
        tolerations += spot_tolerations(options)
    elif options.spot_node_selector:
        # Not preemptible: keep off spot nodes (NotIn also matches nodes without the label).
        node_affinity = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "NotIn", "values": [v]}
                            for k, v in options.spot_node_selector.items()
                        ]
                    }
                ]
            }
        }
    same_run = {"matchLabels": {RUN_LABEL: job}}
    term = {"weight": 100, "podAffinityTerm": {"labelSelector": same_run, "topologyKey": HOSTNAME}}
    affinity: dict[str, Any] = {}
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    spread: list[dict[str, Any]] | None = None
    if packs(run):
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [term]}
    else:
        affinity["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [term]}
        spread = [
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": same_run,
            }
        ]
    return Placement(
        node_selector=selector or None,
        tolerations=tolerations or None,
        affinity=affinity,
        spread=spread,
    )
