"""pod-fits-node-pool: every pod can be scheduled on some node pool of the platform: the pool's
labels match its node selector and required affinity, it tolerates the pool's taints, and its
requests fit one node of the pool with headroom for what the node itself reserves."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trainstack.policy.model import NODE_HEADROOM, Context, Finding, Level, NodePool, Resource, Rule
from trainstack.policy.pods import Requests, gib, pod_requests, pod_templates

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


def why_not(pod: Mapping[str, Any], need: Requests, pool: NodePool, headroom: float) -> str | None:
    if not selects(pod, pool.labels):
        return "node selector/affinity does not match its labels"
    untolerated = [k for k, v, e in pool.taints if not tolerates(pod, (k, v, e))]
    if untolerated:
        return f"taint {', '.join(untolerated)} not tolerated"
    if not pool.sized:
        return None
    cpu, memory = pool.cpu * (1 - headroom), pool.memory * (1 - headroom)
    short = [
        what
        for what, ok in (
            (f"cpu {need.cpu:g} > {cpu:g}", need.cpu <= cpu),
            (f"memory {gib(need.memory)} > {gib(memory)}", need.memory <= memory),
            (f"gpus {need.gpus} > {pool.gpus}", need.gpus <= pool.gpus),
        )
        if not ok
    ]
    return "; ".join(short) if short else None


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if ctx.node_pools is None:
        return  # the platform exports no node pools (kubeconfig mode): nothing to fit against
    headroom = float(config.get("headroom", NODE_HEADROOM))
    for pod in pod_templates(resource.props):
        need = pod_requests(pod.spec)
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
    "GPUs per node, with headroom.",
    level=Level.MANDATORY,
    defaults={"headroom": NODE_HEADROOM},
    check=check,
    types=("kubernetes:",),
)
