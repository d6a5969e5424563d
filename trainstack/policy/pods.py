"""The pod templates inside a resource, and what their containers request.

A KubeDL job keeps one pod template per replica type under ``spec.<kind>ReplicaSpecs`` (KubeDL
v0.5.0 apis/training/v1alpha1/*_types.go); plain workloads keep one under ``spec.template``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.spec.values import quantity

GPU_RESOURCE = "nvidia.com/gpu"


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


def container_requests(c: Mapping[str, Any]) -> Requests:
    res = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
    assert isinstance(res, Mapping)
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}

    def pick(name: str) -> Any:
        # Kubernetes defaults a missing request to the limit.
        return requests.get(name, limits.get(name, 0))

    return Requests(amount(pick("cpu")), amount(pick("memory")), int(amount(pick(GPU_RESOURCE))))


def pod_requests(pod: Mapping[str, Any]) -> Requests:
    """What the scheduler reserves: the sum of containers, or the largest init container."""
    total = Requests(0.0, 0.0, 0)
    for c in pod.get("containers") or ():
        if isinstance(c, Mapping):
            total = total + container_requests(c)
    for c in pod.get("initContainers") or ():
        if isinstance(c, Mapping):
            r = container_requests(c)
            total = Requests(
                max(total.cpu, r.cpu), max(total.memory, r.memory), max(total.gpus, r.gpus)
            )
    return total
