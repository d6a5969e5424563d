"""The queues of a Kueue environment, computed from its teams and node pools (docs/queues.md): one
ResourceFlavor per node pool, per team a ClusterQueue in one cohort and a LocalQueue in its
namespace. Pure data: kueue.py turns it into objects, the platform exports it (`kueueQueues`),
and the `queue-fit` policy rule and `trainstack queue` read it back from there.

How a team's quota becomes per-flavor nominal quotas (Kueue quotas are per flavor and resource;
a ClusterQueue has no total across flavors: apis/kueue/v1beta2/clusterqueue_types.go:255-345 at
Kueue v0.19.2): the team's GPUs fill its GPU pools in pool order, each pool up to what its nodes
hold at `maxSize`; each GPU pool also gets the CPU and memory its GPUs come with on one node; the
rest of the team's CPU and memory fills the CPU pools the same way, the last taking what is left.
So the flavors add up to exactly the team's quota. Each team is poured alone, so together the
teams may be promised more of a pool than it holds, and Kueue admits a job against the nominal
quotas alone: a job admitted beyond what the pool holds keeps its quota with pods that cannot be
scheduled until others end. `oversubscribed` says where, and the platform warns; how much to
promise is the environment's choice (a quota is often sold twice on the bet that teams are not
all busy at once). A kubeconfig cluster has no pools: one flavor, `all-nodes`, without node
labels, holds the whole quota.

What a team may hold at most of a flavor's resource (Kueue v0.19.2
pkg/cache/scheduler/resource_node.go:129-140, potentialAvailable): its nominal quota plus what
the others lend (each its `lendingLimit`, or all its nominal quota), capped at nominal +
`borrowingLimit`. That maximum is also its ResourceQuota's ceiling (tenancy.py): Kubernetes
counts a group's pods against the ResourceQuota from their creation, gated or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainstack.platformnames import GPU_RESOURCE
from trainstack.spec.values import quantity

CPU, MEMORY, GPU = "cpu", "memory", GPU_RESOURCE
RESOURCES = (CPU, MEMORY, GPU)
DEFAULT_FLAVOR = "all-nodes"  # kubeconfig mode: the whole cluster, one flavor
# Every team namespace's LocalQueue has this name; the ClusterQueue is named after the team.
LOCAL_QUEUE = "trainstack"
_SYSTEM_TAINT_KEY = "CriticalAddonsOnly"
_GIB = 1024**3


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    # What the pool holds at its maximum size; None: not known (unbounded here).
    capacity: Mapping[str, float | None] = field(default_factory=dict)
    gpu: bool = False


@dataclass(frozen=True)
class Limits:
    nominal: float
    borrowing: float | None = None  # None: no limit
    lending: float | None = None  # None: lends all of nominal

    @property
    def lendable(self) -> float:
        return self.nominal if self.lending is None else min(self.nominal, self.lending)


@dataclass(frozen=True)
class TeamQueue:
    team: str
    namespace: str
    cluster_queue: str
    weight: float
    quotas: Mapping[str, Mapping[str, Limits]]  # flavor -> resource -> limits


@dataclass(frozen=True)
class QueueModel:
    cohort: str
    flavors: tuple[Flavor, ...]
    teams: Mapping[str, TeamQueue]
    local_queue: str = LOCAL_QUEUE
    # The finalizer releaser runs (trainstack.kueue.releaser): KubeDL can recreate a replica of
    # a queued job.
    releaser: bool = False

    def nominal(self, team: str, flavor: str, resource: str) -> float:
        return self.teams[team].quotas[flavor][resource].nominal

    def lent_by_others(self, team: str, flavor: str, resource: str) -> float:
        return sum(q.quotas[flavor][resource].lendable for t, q in self.teams.items() if t != team)

    def maximum(self, team: str, flavor: str, resource: str) -> float:
        """potentialAvailable: nominal + what the others lend, capped at nominal + borrowing."""
        limits = self.teams[team].quotas[flavor][resource]
        most = limits.nominal + self.lent_by_others(team, flavor, resource)
        if limits.borrowing is not None:
            most = min(most, limits.nominal + limits.borrowing)
        return most

    def ceiling(self, team: str, resource: str) -> float:
        """The most the team can ever hold of a resource, all flavors together."""
        return sum(self.maximum(team, f.name, resource) for f in self.flavors)

    def to_output(self) -> dict[str, Any]:
        """The `kueueQueues` stack output: plain JSON."""

        def limits(x: Limits) -> dict[str, Any]:
            return {"nominal": x.nominal, "borrowingLimit": x.borrowing, "lendingLimit": x.lending}

        return {
            "cohort": self.cohort,
            "localQueue": self.local_queue,
            "releaser": self.releaser,
            "flavors": [
                {
                    "name": f.name,
                    "nodeLabels": dict(f.node_labels),
                    "nodeTaints": [list(t) for t in f.node_taints],
                }
                for f in self.flavors
            ],
            "teams": {
                t: {
                    "namespace": q.namespace,
                    "clusterQueue": q.cluster_queue,
                    "weight": q.weight,
                    "quotas": {
                        f: {r: limits(x) for r, x in rs.items()} for f, rs in q.quotas.items()
                    },
                }
                for t, q in self.teams.items()
            },
        }

    @staticmethod
    def from_output(raw: Any) -> QueueModel | None:
        """The model back from `kueueQueues`; None when the output is absent or odd."""
        if not isinstance(raw, Mapping):
            return None
        try:
            flavors = tuple(
                Flavor(
                    str(f["name"]),
                    {str(k): str(v) for k, v in (f.get("nodeLabels") or {}).items()},
                    tuple((str(a), str(b), str(c)) for a, b, c in f.get("nodeTaints") or ()),
                )
                for f in raw["flavors"]
            )

            def opt(v: Any) -> float | None:
                return None if v is None else float(v)

            teams = {
                str(t): TeamQueue(
                    str(t),
                    str(q["namespace"]),
                    str(q["clusterQueue"]),
                    float(q.get("weight", 1)),
                    {
                        str(f): {
                            str(r): Limits(
                                float(x["nominal"]),
                                opt(x.get("borrowingLimit")),
                                opt(x.get("lendingLimit")),
                            )
                            for r, x in rs.items()
                        }
                        for f, rs in q["quotas"].items()
                    },
                )
                for t, q in raw["teams"].items()
            }
            return QueueModel(
                str(raw["cohort"]),
                flavors,
                teams,
                str(raw.get("localQueue", LOCAL_QUEUE)),
                raw.get("releaser") is True,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


@dataclass(frozen=True)
class TeamShare:
    """What build() needs of a team: its name, namespace, quota and terms in the cohort."""

    name: str
    namespace: str
    cpu: float  # cores
    memory: float  # bytes
    gpus: int
    weight: float = 1.0
    borrowing_percent: int | None = None
    lending_percent: int | None = None


def flavors_of(pools: Sequence[Mapping[str, Any]] | None) -> tuple[Flavor, ...]:
    """One flavor per node pool a training pod may land on (the `nodePools` output's entries;
    the system pool left out), in pool order; kubeconfig mode (None): one without labels."""
    if pools is None:
        return (Flavor(DEFAULT_FLAVOR, {}, (), {CPU: None, MEMORY: None, GPU: None}, gpu=True),)
    out: list[Flavor] = []
    for p in pools:
        taints = tuple(
            (str(t["key"]), str(t.get("value", "")), str(t["effect"]))
            for t in p.get("taints") or ()
        )
        if any(key == _SYSTEM_TAINT_KEY for key, _, _ in taints):
            continue
        size = p.get("maxSize")
        cpu, gpus, mem = p.get("cpu"), p.get("gpus"), p.get("memory")

        def times(per_node: float | None, size: Any = size) -> float | None:
            return None if per_node is None or size is None else float(per_node) * int(size)

        out.append(
            Flavor(
                str(p["name"]),
                {str(k): str(v) for k, v in (p.get("labels") or {}).items()},
                taints,
                {
                    CPU: times(cpu),
                    MEMORY: times(quantity(mem).value if mem else None),
                    GPU: times(gpus),
                },
                gpu=bool(gpus),
            )
        )
    return tuple(out)


def _fill(total: float, flavors: Sequence[Flavor], resource: str) -> dict[str, float]:
    """`total` poured into the flavors in order, each up to its capacity, the last taking what
    is left."""
    out: dict[str, float] = {}
    left = total
    for i, f in enumerate(flavors):
        cap = f.capacity.get(resource)
        take = left if cap is None or i == len(flavors) - 1 else min(left, cap)
        out[f.name] = take
        left -= take
    return out


def split(team: TeamShare, flavors: Sequence[Flavor]) -> dict[str, dict[str, float]]:
    """The team's quota as per-flavor nominal quotas (module docstring)."""
    out = {f.name: {CPU: 0.0, MEMORY: 0.0, GPU: 0.0} for f in flavors}
    gpu_flavors = [f for f in flavors if f.gpu]
    cpu_flavors = [f for f in flavors if not f.gpu]
    if not cpu_flavors and not gpu_flavors:
        return out
    if len(flavors) == 1:
        out[flavors[0].name] = {CPU: team.cpu, MEMORY: team.memory, GPU: float(team.gpus)}
        return out
    gpus = _fill(float(team.gpus), gpu_flavors, GPU) if gpu_flavors else {}
    cpu_left, mem_left = team.cpu, team.memory
    for f in gpu_flavors:
        n = gpus.get(f.name, 0.0)
        out[f.name][GPU] = n
        node_gpus = f.capacity.get(GPU)
        share = n / node_gpus if node_gpus else (n / team.gpus if team.gpus else 0.0)
        for res in (CPU, MEMORY):
            cap = f.capacity.get(res)
            want = (
                share * cap
                if cap is not None
                else share * (team.cpu if res == CPU else team.memory)
            )
            if res == CPU:
                want = min(math.floor(want), cpu_left)
                cpu_left -= want
            else:
                want = min(math.floor(want / _GIB) * _GIB, mem_left)
                mem_left -= want
            out[f.name][res] = want
    if cpu_flavors:
        for res, left in ((CPU, cpu_left), (MEMORY, mem_left)):
            for name, amount in _fill(left, cpu_flavors, res).items():
                out[name][res] = amount
    return out


def _percent_of(value: float, percent: int | None, resource: str) -> float | None:
    if percent is None:
        return None
    amount = value * percent / 100
    if resource == GPU:
        return float(math.floor(amount))
    if resource == MEMORY:
        return float(math.floor(amount / (1024**2)) * 1024**2)
    return math.floor(amount * 1000) / 1000


def oversubscribed(model: QueueModel) -> list[str]:
    """Per pool the teams' nominal quotas promise more of than it holds at its maxSize, one line
    naming each such resource: held, promised."""
    out = []
    for f in model.flavors:
        over = []
        for r in RESOURCES:
            cap = f.capacity.get(r)
            promised = sum(q.quotas[f.name][r].nominal for q in model.teams.values())
            if cap is not None and promised > cap:
                over.append(f"{r} {show(r, cap)} held, {show(r, promised)} promised")
        if over:
            out.append(
                f"node pool {f.name} at its maxSize holds less than the teams' Kueue quotas "
                f"promise there ({'; '.join(over)}): a job admitted beyond it waits with "
                "unschedulable pods, holding its quota (raise the pool's maxSize or lower the "
                "quotas in trainstack:teams, unless selling it twice is intended: docs/queues.md)"
            )
    return out


def build(
    cohort: str, teams: Sequence[TeamShare], pools: Sequence[Mapping[str, Any]] | None
) -> QueueModel:
    flavors = flavors_of(pools)
    out: dict[str, TeamQueue] = {}
    for t in teams:
        nominal = split(t, flavors)
        totals = {CPU: t.cpu, MEMORY: t.memory, GPU: float(t.gpus)}
        out[t.name] = TeamQueue(
            t.name,
            t.namespace,
            t.name,
            t.weight,
            {
                f: {
                    r: Limits(
                        v,
                        # of the team's whole quota: a team may borrow in a pool it has no
                        # share of
                        _percent_of(totals[r], t.borrowing_percent, r),
                        # of what it has in this pool
                        _percent_of(v, t.lending_percent, r),
                    )
                    for r, v in rs.items()
                }
                for f, rs in nominal.items()
            },
        )
    return QueueModel(cohort, flavors, out)


def show(resource: str, value: float) -> str:
    """A quantity as Kubernetes and a reader would write it: 4, 1500m, 64Gi, 512Mi."""
    if resource == MEMORY:
        for unit, size in (("Ti", 1024**4), ("Gi", _GIB), ("Mi", 1024**2), ("Ki", 1024)):
            if value >= size and value % size == 0:
                return f"{int(value // size)}{unit}"
        return str(int(value))
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"
