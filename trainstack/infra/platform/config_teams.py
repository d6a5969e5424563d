"""The teams of a platform (`trainstack:teams`): each team's namespace, quota, container
defaults and priority cap, typed and checked (config.py reads the rest of the stack config)."""

from __future__ import annotations

from dataclasses import dataclass

from trainstack import k8snames
from trainstack import platformnames as names
from trainstack.infra.configread import Section
from trainstack.infra.platform.config_budget import Budget, load_budget
from trainstack.infra.platform.kubedl_source import KUBEDL_CRDS, crd_resource
from trainstack.spec.values import quantity

DEFAULT_MAX_PRIORITY = 5

# What a team's quota holds besides CPU, memory, GPUs and pods, unless the team sets its own
# (trainstack:teams[].quota). Claims and storage: a run's static OSS/NAS claims request a nominal
# 20Gi each (render/parts.py), an ESSD claim its real size. Load balancers and node ports: 0, as
# no run needs a Service of those types (serviceguard.py refuses them anyway). Ephemeral storage:
# what the containers' requests and limits add up to (the LimitRange gives each one that states
# none its default, ContainerDefaults).
DEFAULT_STORAGE = "2Ti"
DEFAULT_CLAIMS = 100
DEFAULT_EPHEMERAL_STORAGE = "500Gi"
DEFAULT_LIMIT_EPHEMERAL_STORAGE = "10Ti"
# ResourceQuota `count/<resource>` objects a team may hold, so that no team fills etcd: what a run
# stack creates and what KubeDL creates for it (a headless Service per replica, MPI's ConfigMap).
# Every enabled KubeDL kind gets DEFAULT_KUBEDL_JOBS, as `count/<plural>.<group>`.
DEFAULT_OBJECT_COUNTS = {"configmaps": 500, "secrets": 200, "services": 1000, "jobs.batch": 200}
DEFAULT_KUBEDL_JOBS = 200


@dataclass(frozen=True)
class Quota:
    cpu: str
    memory: str
    gpu: int
    pods: int | None
    storage: str = DEFAULT_STORAGE  # requests.storage
    claims: int = DEFAULT_CLAIMS  # persistentvolumeclaims
    load_balancers: int = 0  # services.loadbalancers
    node_ports: int = 0  # services.nodeports
    ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE  # requests.ephemeral-storage
    limit_ephemeral_storage: str = DEFAULT_LIMIT_EPHEMERAL_STORAGE  # limits.ephemeral-storage
    # count/<resource> the team sets itself (the rest: DEFAULT_OBJECT_COUNTS, DEFAULT_KUBEDL_JOBS)
    objects: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ContainerDefaults:
    """What a container that sets no requests or limits gets (a LimitRange): requests so the
    quota admits it, limits so it is not unbounded on its node."""

    cpu: str
    memory: str
    limit_cpu: str = "2"
    limit_memory: str = "4Gi"
    # Rendered containers state none: the request is what the quota counts them at, the limit
    # where the kubelet evicts one filling its node's disk (a `download` binding's copy counts).
    ephemeral_storage: str = "1Gi"
    limit_ephemeral_storage: str = "50Gi"


@dataclass(frozen=True)
class Team:
    name: str
    namespace: str
    quota: Quota
    # The highest run priority this team may use: pods of higher classes are refused in its
    # namespace, so one team cannot preempt every other team with priority 9.
    max_priority: int = DEFAULT_MAX_PRIORITY
    defaults: ContainerDefaults = ContainerDefaults(cpu="500m", memory="1Gi")
    budget: Budget | None = None  # what it may spend per window (config_budget.py)


def load_teams(main: Section) -> tuple[Team, ...]:
    teams: list[Team] = []
    for item in main.sections("teams", min_items=1):
        name = item.string("name", pattern=k8snames.LABEL_63, what="a DNS label ([a-z0-9-], ≤ 63)")
        namespace = item.string(
            "namespace", name, pattern=k8snames.LABEL_63, what="a DNS label ([a-z0-9-], ≤ 63)"
        )
        if namespace in ("default", "kubedl-system", names.ADMISSION_NAMESPACE) or (
            namespace.startswith("kube-")
        ):
            raise item.error("namespace", "a namespace of its own, not a system one", namespace)
        quota = _quota(item.section("quota"))
        max_priority = item.integer(
            "maxPriority",
            DEFAULT_MAX_PRIORITY,
            minimum=min(names.PRIORITIES),
            maximum=max(names.PRIORITIES),
        )
        d = item.section("defaults", {})
        defaults = ContainerDefaults(
            cpu=d.quantity("cpu", "500m"),
            memory=d.quantity("memory", "1Gi"),
            limit_cpu=d.quantity("limitCpu", "2"),
            limit_memory=d.quantity("limitMemory", "4Gi"),
            ephemeral_storage=d.quantity("ephemeralStorage", ContainerDefaults.ephemeral_storage),
            limit_ephemeral_storage=d.quantity(
                "limitEphemeralStorage", ContainerDefaults.limit_ephemeral_storage
            ),
        )
        # The API server refuses a LimitRange whose default request exceeds its default limit.
        for request, limit, key in (
            (defaults.cpu, defaults.limit_cpu, "limitCpu"),
            (defaults.memory, defaults.limit_memory, "limitMemory"),
            (
                defaults.ephemeral_storage,
                defaults.limit_ephemeral_storage,
                "limitEphemeralStorage",
            ),
        ):
            if quantity(limit).value < quantity(request).value:
                raise d.error(key, f"a limit at least the default request ({request})", limit)
        d.finish()
        budget = load_budget(item)
        item.finish()
        if any(t.namespace == namespace for t in teams):
            raise item.error("namespace", "a namespace no other team uses", namespace)
        teams.append(
            Team(
                name=name,
                namespace=namespace,
                quota=quota,
                max_priority=max_priority,
                defaults=defaults,
                budget=budget,
            )
        )
    return tuple(teams)


def object_count_keys() -> tuple[str, ...]:
    """The `count/<resource>` names a team's quota may set: DEFAULT_OBJECT_COUNTS' and every
    KubeDL kind's (`<plural>.<group>`, from its CRD file name), enabled or not."""
    return (*DEFAULT_OBJECT_COUNTS, *sorted(kubedl_count_key(kind) for kind in KUBEDL_CRDS))


def kubedl_count_key(kind: str) -> str:
    group, plural = crd_resource(kind)
    return f"{plural}.{group}"


def _quota(q: Section) -> Quota:
    objects = q.section("objects", {})
    counts = tuple(
        (key, objects.integer(key, minimum=0)) for key in object_count_keys() if objects.has(key)
    )
    objects.finish()
    quota = Quota(
        cpu=q.quantity("cpu"),
        memory=q.quantity("memory"),
        gpu=q.integer("gpu", 0, minimum=0),
        pods=q.integer("pods", minimum=1) if q.has("pods") else None,
        storage=q.quantity("storage", DEFAULT_STORAGE),
        claims=q.integer("persistentVolumeClaims", DEFAULT_CLAIMS, minimum=0),
        load_balancers=q.integer("loadBalancers", 0, minimum=0),
        node_ports=q.integer("nodePorts", 0, minimum=0),
        ephemeral_storage=q.quantity("ephemeralStorage", DEFAULT_EPHEMERAL_STORAGE),
        limit_ephemeral_storage=q.quantity(
            "limitEphemeralStorage", DEFAULT_LIMIT_EPHEMERAL_STORAGE
        ),
        objects=counts,
    )
    q.finish()
    return quota
