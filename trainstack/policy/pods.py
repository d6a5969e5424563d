"""The pod templates inside a resource, and what their containers request.

A KubeDL job keeps one pod template per replica type under ``spec.<kind>ReplicaSpecs`` (KubeDL
v0.5.0 apis/training/v1alpha1/*_types.go); plain workloads keep one under ``spec.template``; a
Kubeflow Trainer TrainJob keeps none, and its nodes' pod is the one Trainer builds from it and its
runtime (trainstack.trainer.nodepod); an MPI run's own TrainingRuntime keeps them whole, counted
there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.platformnames import GPU_RESOURCE
from trainstack.policy.model import ContainerDefaults
from trainstack.spec.values import quantity
from trainstack.trainer.nodepod import is_train_job, is_training_runtime, node_pods, runtime_pods


@dataclass(frozen=True)
class PodTemplate:
    path: str  # field path of the pod spec, e.g. spec.pytorchReplicaSpecs.Worker.template.spec
    spec: Mapping[str, Any]
    replicas: int
    namespace: str | None


@dataclass(frozen=True)
class Requests:
    cpu: float
    memory: float
    gpus: int

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.cpu + other.cpu, self.memory + other.memory, self.gpus + other.gpus)

    def times(self, n: int) -> Requests:
        return Requests(self.cpu * n, self.memory * n, self.gpus * n)

    def show(self) -> str:
        return f"cpu={self.cpu:g}, memory={gib(self.memory)}, gpus={self.gpus}"


def gib(value: float) -> str:
    return f"{value / 2**30:g}Gi"


def amount(value: Any) -> float:
    """A Kubernetes quantity as a number (cores, bytes); 0 for what is not one."""
    try:
        return quantity(value).value
    except ValueError:
        return 0.0


def pod_templates(props: Mapping[str, Any]) -> Iterator[PodTemplate]:
    meta = props.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    spec = props.get("spec")
    if not isinstance(spec, Mapping):
        return
    if is_train_job(props) or is_training_runtime(props):
        made = node_pods(props) if is_train_job(props) else runtime_pods(props)
        for path, node, nodes in made:
            yield PodTemplate(path, node, nodes, namespace)
        return
    for key, value in sorted(spec.items()):
        if key.endswith("ReplicaSpecs") and isinstance(value, Mapping):
            for role, replica in sorted(value.items()):
                template = replica.get("template") if isinstance(replica, Mapping) else None
                pod = template.get("spec") if isinstance(template, Mapping) else None
                if isinstance(pod, Mapping):
                    count = replica.get("replicas", 1)
                    yield PodTemplate(
                        f"spec.{key}.{role}.template.spec",
                        pod,
                        int(count) if isinstance(count, int | float) else 1,
                        namespace,
                    )
    template = spec.get("template")
    if isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping):
        count = spec.get("replicas", 1)
        yield PodTemplate(
            "spec.template.spec",
            template["spec"],
            int(count) if isinstance(count, int | float) else 1,
            namespace,
        )
    if props.get("kind") == "Pod" or "containers" in spec:
        yield PodTemplate("spec", spec, 1, namespace)


def containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(field path relative to the pod spec, container) for containers and init containers."""
    for key in ("initContainers", "containers"):
        for i, c in enumerate(pod.get(key) or ()):
            if isinstance(c, Mapping):
                yield f"{key}[{i}]", c


def container_requests(c: Mapping[str, Any], defaults: ContainerDefaults | None = None) -> Requests:
    """What the scheduler counts for one container as the API server admits it: a missing request
    is the limit (the API's defaulting), else the namespace's LimitRange ``defaultRequest``
    (Kubernetes plugin/pkg/admission/limitranger: it fills what the container leaves unset)."""
    res = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
    assert isinstance(res, Mapping)
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    fallback = {"cpu": defaults.cpu, "memory": defaults.memory} if defaults else {}

    def pick(name: str) -> Any:
        return requests.get(name, limits.get(name, fallback.get(name, 0)))

    return Requests(amount(pick("cpu")), amount(pick("memory")), int(amount(pick(GPU_RESOURCE))))


def pod_requests(pod: Mapping[str, Any], defaults: ContainerDefaults | None = None) -> Requests:
    """What the scheduler reserves: the sum of containers, or the largest init container;
    ``defaults``: the LimitRange's, for containers that state no request."""
    total = Requests(0.0, 0.0, 0)
    for c in pod.get("containers") or ():
        if isinstance(c, Mapping):
            total = total + container_requests(c, defaults)
    for c in pod.get("initContainers") or ():
        if isinstance(c, Mapping):
            r = container_requests(c, defaults)
            total = Requests(
                max(total.cpu, r.cpu), max(total.memory, r.memory), max(total.gpus, r.gpus)
            )
    return total


def memory_limit(pod: Mapping[str, Any], defaults: ContainerDefaults | None = None) -> float | None:
    """The pod's memory limit as the kubelet sizes a memory-backed emptyDir by it: containers
    summed, or the largest init container (a limit left unset is the LimitRange's ``default``);
    None when a container has none at all (bounded only by its node)."""
    total = 0.0
    largest_init = 0.0
    for key in ("containers", "initContainers"):
        for c in pod.get(key) or ():
            if not isinstance(c, Mapping):
                continue
            res = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
            limit = (res.get("limits") or {}).get("memory") if isinstance(res, Mapping) else None
            if limit is not None:
                value = amount(limit)
            elif defaults is not None:
                value = defaults.limit_memory
            else:
                return None
            if key == "containers":
                total += value
            else:
                largest_init = max(largest_init, value)
    return max(total, largest_init)


def memory_volumes(pod: Mapping[str, Any]) -> float:
    """Bytes of the pod's memory-backed emptyDirs (``/dev/shm``): tmpfs pages are charged to the
    memory of the container that writes them (Kubernetes "Volumes", emptyDir)."""
    total = 0.0
    for v in pod.get("volumes") or ():
        empty = v.get("emptyDir") if isinstance(v, Mapping) else None
        if isinstance(empty, Mapping) and empty.get("medium") == "Memory":
            total += amount(empty.get("sizeLimit", 0))
    return total
