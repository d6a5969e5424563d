"""Does a run fit its environment? Pod requests against node pools (with headroom) and the team's
quota, from the platform's checked config: what `trainstack plan` of the shipped examples is
tested with, and what a policy rule can call.

A pod fits a node pool when its requests fit the pool's *smallest* instance type (the autoscaler
may start any of them) after ``HEADROOM``: the kubelet's reservation and the DaemonSets every
node runs (network, CSI, log agent) take part of each node, so a pod that asks for all of a
node's vCPUs or memory stays Pending. Which pools a pod may land on follows the renderer and the
pools' taints (``trainstack.render.placement``, ``infra/platform/nodepools.py``): GPU pods on GPU
pools, spot pods on spot pools, other pods on the autoscaled CPU pools; the fixed system pool is
not for runs. kubeconfig mode configures no pools (the cluster is whatever it is), so only the
team's quota is checked there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainstack.infra.headroom import NODE_HEADROOM
from trainstack.infra.platform.config import PlatformConfig, Team, load
from trainstack.infra.platform.config_ack import PoolConfig
from trainstack.spec.model import Run
from trainstack.spec.values import quantity

GIB = 1024**3
HEADROOM = NODE_HEADROOM


@dataclass(frozen=True)
class Capacity:
    cpu: float  # cores
    memory: float  # bytes
    gpu: int = 0

    def usable(self, headroom: float = HEADROOM) -> Capacity:
        """What one pod may request on such a node (GPUs are not shared, so all of them)."""
        return Capacity(self.cpu * (1 - headroom), self.memory * (1 - headroom), self.gpu)

    def holds(self, other: Capacity) -> bool:
        return other.cpu <= self.cpu and other.memory <= self.memory and other.gpu <= self.gpu

    def times(self, n: int) -> Capacity:
        return Capacity(self.cpu * n, self.memory * n, self.gpu * n)

    def describe(self) -> str:
        cpu = f"{self.cpu:g}" if self.cpu == int(self.cpu) else f"{self.cpu:.2f}"
        gpu = f", {self.gpu} GPU" if self.gpu else ""
        return f"{cpu} vCPU, {self.memory / GIB:.1f} GiB{gpu}"


# Alibaba Cloud ECS instance types (vCPUs, GiB, GPUs), from the instance family pages; a pool
# naming a type not listed here cannot be checked and is reported as such.
INSTANCE_TYPES: dict[str, Capacity] = {
    "ecs.g6.xlarge": Capacity(4, 16 * GIB),
    "ecs.g6.2xlarge": Capacity(8, 32 * GIB),
    "ecs.g6.4xlarge": Capacity(16, 64 * GIB),
    "ecs.g7.xlarge": Capacity(4, 16 * GIB),
    "ecs.g7.2xlarge": Capacity(8, 32 * GIB),
    "ecs.g7.4xlarge": Capacity(16, 64 * GIB),
    "ecs.g7.8xlarge": Capacity(32, 128 * GIB),
    "ecs.gn7i-c8g1.2xlarge": Capacity(8, 30 * GIB, 1),  # NVIDIA A10
    "ecs.gn7i-c16g1.4xlarge": Capacity(16, 60 * GIB, 1),
    "ecs.gn7i-c32g1.8xlarge": Capacity(32, 188 * GIB, 1),
    "ecs.gn6v-c8g1.2xlarge": Capacity(8, 32 * GIB, 1),  # NVIDIA V100
    "ecs.gn6v-c8g1.8xlarge": Capacity(32, 128 * GIB, 4),
    "ecs.gn6v-c8g1.16xlarge": Capacity(64, 256 * GIB, 8),
}


@dataclass(frozen=True)
class PodRequest:
    """What one role's pods ask for (each of ``replicas`` pods alike)."""

    role: str
    replicas: int
    request: Capacity
    spot: bool
    shared_memory: float = 0.0  # bytes of /dev/shm (memory-backed: charged to the pod's memory)


@dataclass(frozen=True)
class Misfit:
    role: str | None  # None: the run as a whole (the team's quota)
    message: str

    def render(self) -> str:
        return f"{self.role}: {self.message}" if self.role else self.message


def smallest(pool: PoolConfig) -> Capacity | None:
    """The pool's smallest instance type in every dimension; None if one is unknown."""
    shapes = [INSTANCE_TYPES.get(t) for t in pool.instance_types]
    if not shapes or any(s is None for s in shapes):
        return None
    known = [s for s in shapes if s is not None]
    return Capacity(
        min(s.cpu for s in known), min(s.memory for s in known), min(s.gpu for s in known)
    )


def candidate_pools(pod: PodRequest, pools: Iterable[PoolConfig]) -> list[PoolConfig]:
    """The autoscaled pools the renderer's selectors and tolerations let the pod land on."""
    wants_gpu = pod.request.gpu > 0
    return [p for p in pools if p.fixed_size is None and p.spot == pod.spot and p.gpu == wants_gpu]


def pods_of(run: Run, team: Team) -> list[PodRequest]:
    """Each role's requests; a role without cpu/memory gets the team's LimitRange defaults."""
    default_cpu = quantity(team.defaults.cpu).value
    default_memory = quantity(team.defaults.memory).value
    return [
        PodRequest(
            role=role,
            replicas=res.replicas,
            request=Capacity(
                res.cpu.value if res.cpu else default_cpu,
                res.memory.value if res.memory else default_memory,
                res.gpu,
            ),
            spot=run.spot is not None,
            shared_memory=res.shared_memory.value if res.shared_memory else 0.0,
        )
        for role, res in run.resources.items()
    ]


def pod_misfits(
    pod: PodRequest, pools: Sequence[PoolConfig], headroom: float = HEADROOM
) -> list[Misfit]:
    """Why one of ``pod``'s pods would stay Pending on these pools (empty: it fits a node)."""
    problems: list[Misfit] = []
    if pod.shared_memory > pod.request.memory:
        problems.append(
            Misfit(
                pod.role,
                f"sharedMemory {pod.shared_memory / GIB:.1f} GiB is "
                f"more than its memory {pod.request.memory / GIB:.1f} "
                "GiB, which /dev/shm is charged to",
            )
        )
    candidates = candidate_pools(pod, pools)
    if not candidates:
        return [*problems, Misfit(pod.role, f"the environment has no {_kind(pod)} for it")]
    for pool in candidates:
        if smallest(pool) is None:
            unknown = [t for t in pool.instance_types if t not in INSTANCE_TYPES]
            problems.append(
                Misfit(
                    pod.role,
                    f"pool {pool.name!r}: instance types "
                    f"{', '.join(unknown)} are not in "
                    "trainstack.infra.fit.INSTANCE_TYPES",
                )
            )
    if not _fitting(pod, candidates, headroom):
        best = ", ".join(
            f"{p.name}: {s.usable(headroom).describe()}"
            for p in candidates
            if (s := smallest(p)) is not None
        )
        problems.append(
            Misfit(
                pod.role,
                f"{pod.request.describe()} per pod does not fit any "
                f"{_kind(pod)} with {headroom:.0%} headroom ({best})",
            )
        )
    return problems


def node_misfits(
    pods: Sequence[PodRequest], pools: Sequence[PoolConfig], headroom: float = HEADROOM
) -> list[Misfit]:
    """Whether the pools' ``maxSize`` has nodes for all the run's pods at once (gang scheduling
    starts none until all fit). An estimate without bin-packing: each role's pods are packed as
    densely as its best-fitting pool allows, roles sharing pools do not share nodes."""
    groups: dict[tuple[str, ...], list[PodRequest]] = {}
    for pod in pods:
        names = tuple(p.name for p in candidate_pools(pod, pools))
        groups.setdefault(names, []).append(pod)
    problems = []
    for names, members in groups.items():
        group = [p for p in pools if p.name in names]
        needed = 0
        for pod in members:
            fitting = _fitting(pod, group, headroom)
            if not fitting:
                break  # pod_misfits reports it
            per_node = max(
                _per_node(pod.request, s.usable(headroom))
                for p in fitting
                if (s := smallest(p)) is not None
            )
            needed += math.ceil(pod.replicas / per_node)
        else:
            available = sum(p.max_size for p in group)
            if needed > available:
                problems.append(
                    Misfit(
                        None,
                        f"{', '.join(m.role for m in members)} need "
                        f"{needed} nodes of pools {', '.join(names)}, "
                        f"whose maxSize allow {available}",
                    )
                )
    return problems


def _kind(pod: PodRequest) -> str:
    return ("spot " if pod.spot else "") + ("GPU" if pod.request.gpu else "CPU") + " pool"


def _fitting(pod: PodRequest, pools: Iterable[PoolConfig], headroom: float) -> list[PoolConfig]:
    return [
        p for p in pools if (s := smallest(p)) is not None and s.usable(headroom).holds(pod.request)
    ]


def _per_node(request: Capacity, usable: Capacity) -> int:
    counts = [
        math.floor(usable.cpu / request.cpu) if request.cpu else math.inf,
        math.floor(usable.memory / request.memory) if request.memory else math.inf,
        math.floor(usable.gpu / request.gpu) if request.gpu else math.inf,
    ]
    return int(min(min(counts), 1_000))


def quota_misfits(pods: Sequence[PodRequest], team: Team) -> list[Misfit]:
    """The run's total requests against the team's ResourceQuota (the quota refuses the rest)."""
    total = Capacity(0, 0, 0)
    for pod in pods:
        each = pod.request.times(pod.replicas)
        total = Capacity(total.cpu + each.cpu, total.memory + each.memory, total.gpu + each.gpu)
    quota = Capacity(
        quantity(team.quota.cpu).value, quantity(team.quota.memory).value, team.quota.gpu
    )
    problems = []
    if not quota.holds(total):
        problems.append(
            Misfit(
                None,
                f"the run asks for {total.describe()} in all, more than "
                f"team {team.name!r}'s quota ({quota.describe()})",
            )
        )
    count = sum(p.replicas for p in pods)
    if team.quota.pods is not None and count > team.quota.pods:
        problems.append(
            Misfit(None, f"{count} pods, more than team {team.name!r}'s quota of {team.quota.pods}")
        )
    return problems


def run_misfits(
    run: Run, cfg: PlatformConfig, team: Team, headroom: float = HEADROOM
) -> list[Misfit]:
    """Everything that keeps ``run`` from being scheduled whole in ``cfg``'s environment."""
    pods = pods_of(run, team)
    problems = quota_misfits(pods, team)
    if cfg.ack is not None:
        for pod in pods:
            problems.extend(pod_misfits(pod, cfg.ack.pools, headroom))
        problems.extend(node_misfits(pods, cfg.ack.pools, headroom))
    return problems


def team_of(run: Run, cfg: PlatformConfig) -> Team | None:
    """The team the run deploys as (docs/deploy.md): the one owning its ``spec.namespace``, else
    its ``team`` tag's, else the environment's only team."""
    if run.namespace:
        return next((t for t in cfg.teams if t.namespace == run.namespace), None)
    name = run.tags.get("team")
    if name is None:
        return cfg.teams[0] if len(cfg.teams) == 1 else None
    return next((t for t in cfg.teams if t.name == name), None)


def load_environment(root: Path, env: str) -> PlatformConfig:
    """``Pulumi.<env>.yaml`` of the platform project at ``root``, checked as ``trainstack plan``
    checks it (offline: set-up steps still pending are no error)."""
    from trainstack.envfile import find_project, read_env

    project = find_project(root)
    config = read_env(project, env)
    return load(
        config.values,
        stack=env,
        source=f"Pulumi.{env}.yaml",
        secret_keys=config.secret_keys,
        root=project.root,
        offline=True,
    )
