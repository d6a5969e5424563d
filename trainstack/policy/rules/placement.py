"""pod-fits-node-pool: every pod can be scheduled on some node pool of the platform: the pool's
labels match its node selector and required affinity, it tolerates the pool's taints, and its
requests fit one node of the pool with headroom for what the node itself reserves. Requests are
counted as the API server admits the pod: a container that states none gets its team's LimitRange
defaults. And the pod's memory-backed ``/dev/shm`` fits the memory it is charged to.

With ``job-fits-pools`` (all of a job's pods at once) this is the one fit check: ``plan``,
``policy check``, ``deploy`` and the CrossGuard pack run it (tests/policy/test_one_fit_check.py
fails when a second one appears)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trainstack.policy.model import NODE_HEADROOM, Context, Finding, Level, NodePool, Resource, Rule
from trainstack.policy.pods import (
    Requests,
    gib,
    memory_limit,
    memory_volumes,
    pod_requests,
    pod_templates,
)

_BLOCKING = ("NoSchedule", "NoExecute")


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
    values = [str(v) for v in expr.get("values") or ()]
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return True  # Gt/Lt on numeric labels: not decided here


def selects(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = pod.get("nodeSelector") or {}
    if any(labels.get(k) != str(v) for k, v in selector.items()):
        return False
    affinity = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms: Sequence[Mapping[str, Any]] = affinity.get("nodeSelectorTerms") or ()
    return not terms or any(
        all(_expression_matches(e, labels) for e in t.get("matchExpressions") or ()) for t in terms
    )


def tolerates(pod: Mapping[str, Any], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    if effect not in _BLOCKING:
        return True
    for t in pod.get("tolerations") or ():
        if t.get("effect") and t.get("effect") != effect:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == key):
            return True
        if t.get("key") == key and str(t.get("value", "")) == value:
            return True
    return False


def lands_on(pod: Mapping[str, Any], pool: NodePool) -> str | None:
    """Why the scheduler keeps the pod off the pool's nodes whatever its size; None: it may land."""
    if not selects(pod, pool.labels):
        return "node selector/affinity does not match its labels"
    untolerated = [k for k, v, e in pool.taints if not tolerates(pod, (k, v, e))]
    if untolerated:
        return f"taint {', '.join(untolerated)} not tolerated"
    return None


def usable(pool: NodePool, headroom: float) -> Requests:
    """What one pod may ask of one of the pool's nodes (GPUs are not shared: all of them)."""
    return Requests(pool.cpu * (1 - headroom), pool.memory * (1 - headroom), pool.gpus)


def short_of(need: Requests, pool: NodePool, headroom: float) -> str | None:
    """What ``need`` asks beyond one node of a sized pool; None: it fits."""
    room = usable(pool, headroom)
    short = [
        what
        for what, ok in (
            (f"cpu {need.cpu:g} > {room.cpu:g}", need.cpu <= room.cpu),
            (f"memory {gib(need.memory)} > {gib(room.memory)}", need.memory <= room.memory),
            (f"gpus {need.gpus} > {room.gpus}", need.gpus <= room.gpus),
        )
        if not ok
    ]
    return "; ".join(short) if short else None


def why_not(pod: Mapping[str, Any], need: Requests, pool: NodePool, headroom: float) -> str | None:
    placed = lands_on(pod, pool)
    if placed is not None or not pool.sized:
        return placed  # an unknown shape takes any size; job-fits-pools names it
    return short_of(need, pool, headroom)


def _shm(resource: Resource, ctx: Context) -> Iterator[Finding]:
    """A memory-backed emptyDir is tmpfs, its pages charged to the writing container's memory
    cgroup, and the kubelet sizes it at no more than the pod's memory limit (Kubernetes
    "Volumes", emptyDir): past that the pod is OOMKilled. Validation refuses sharedMemory over
    a role's memory; a role without memory gets the LimitRange's default limit, known only here."""
    for pod in pod_templates(resource.props):
        shm = memory_volumes(pod.spec)
        limit = memory_limit(pod.spec, ctx.defaults_of(pod.namespace))
        if shm and limit is not None and shm > limit:
            yield Finding(
                f"{pod.path}.volumes",
                f"memory-backed emptyDir (/dev/shm) of {gib(shm)} is more than the pod's memory "
                f"limit {gib(limit)}, which it is charged to",
                "give the role a memory of at least its sharedMemory (resources.<role>.memory), "
                "or a smaller sharedMemory",
            )


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    yield from _shm(resource, ctx)
    if ctx.node_pools is None:
        return  # the platform exports no node pools (kubeconfig mode): nothing to fit against
    headroom = float(config.get("headroom", NODE_HEADROOM))
    for pod in pod_templates(resource.props):
        need = pod_requests(pod.spec, ctx.defaults_of(pod.namespace))
        reasons = {p.name: why_not(pod.spec, need, p, headroom) for p in ctx.node_pools}
        if any(r is None for r in reasons.values()):
            continue
        yield Finding(
            pod.path,
            f"a pod requesting {need.show()} fits no node pool ("
            + "; ".join(f"{name}: {why}" for name, why in sorted(reasons.items()))
            + ")",
            f"request at most what one node of a pool offers less {headroom:.0%} headroom, "
            "or split the work over more replicas, or add a pool that fits",
        )


RULE = Rule(
    id="pod-fits-node-pool",
    description="Every pod fits one node of some node pool: selector, taints, CPU, memory and "
    "GPUs per node, with headroom (a container without requests at its team's defaults); "
    "its /dev/shm fits its memory.",
    level=Level.MANDATORY,
    defaults={"headroom": NODE_HEADROOM},
    check=check,
    types=("kubernetes:",),
)
