"""What one node of an ECS instance type offers: vCPUs, memory, GPUs.

The policy ``pod-fits-node-pool`` needs each pool's shape, which the cloud knows only after the
pool exists; these are Alibaba Cloud's published figures for the types the shipped environments
use. General families (g, c, r) follow their sizing rule (``<n>xlarge`` = 4n vCPUs; 4, 2, 8 GiB
per vCPU); other types are unknown (``None``) and every pod is taken to fit them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    cpu: int  # vCPUs
    memory_gib: int
    gpus: int


# https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1
GPU_TYPES: dict[str, Shape] = {
    "ecs.gn7i-c8g1.2xlarge": Shape(8, 30, 1),  # A10
    "ecs.gn7i-c16g1.4xlarge": Shape(16, 60, 1),
    "ecs.gn7i-c32g1.8xlarge": Shape(32, 188, 1),
    "ecs.gn7i-4x.8xlarge": Shape(32, 128, 4),
    "ecs.gn6v-c8g1.2xlarge": Shape(8, 32, 1),  # V100
    "ecs.gn6v-c8g1.8xlarge": Shape(32, 128, 4),
    "ecs.gn6v-c8g1.16xlarge": Shape(64, 256, 8),
    "ecs.gn6i-c4g1.xlarge": Shape(4, 15, 1),  # T4
    "ecs.gn6i-c8g1.2xlarge": Shape(8, 31, 1),
}
_GENERAL = re.compile(r"ecs\.(g|c|r)[5-9][a-z]*\.(\d*)x?large")
_GIB_PER_CPU = {"g": 4, "c": 2, "r": 8}


def shape(instance_type: str) -> Shape | None:
    if instance_type in GPU_TYPES:
        return GPU_TYPES[instance_type]
    match = _GENERAL.fullmatch(instance_type)
    if not match:
        return None
    family, n = match.group(1), match.group(2)
    size = instance_type.rsplit(".", 1)[-1]
    cpu = 2 if size == "large" else 4 * (int(n) if n else 1)
    return Shape(cpu, cpu * _GIB_PER_CPU[family], 0)


def smallest(instance_types: tuple[str, ...]) -> Shape | None:
    """The autoscaler may start any of a pool's types: a pod must fit the smallest."""
    shapes = [shape(t) for t in instance_types]
    if not shapes or any(s is None for s in shapes):
        return None
    known = [s for s in shapes if s is not None]
    return Shape(
        min(s.cpu for s in known), min(s.memory_gib for s in known), min(s.gpus for s in known)
    )
