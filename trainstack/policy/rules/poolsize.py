"""job-fits-pools: the node pools a job's pods may land on can hold all of them at once, at the
pools' ``maxSize``; and where that, or whether a pod fits one node at all, cannot be judged
because a pool's instance types have no known shape, it says so.

Advisory by default, and its own rule rather than part of ``pod-fits-node-pool``: a pod that fits
no node never starts (mandatory), while a job whose replicas outnumber the nodes is a different
case. Without gang scheduling (KubeDL's default: ``--gang-scheduler-name`` unset) the operator
creates every pod and the scheduler starts those that fit; the rest stay Pending until nodes
free, which an ElasticBatchJob or an asynchronous parameter-server job may be written to work
with. With a gang scheduler none of the pods start until all fit, so the job never starts: an
environment that configures one sets this rule mandatory (``policy:rules`` in
``Pulumi.ack-dev.yaml``). The finding says which case the environment is in.

The count is an estimate without bin-packing, as the autoscaler's is not ours to replay: each
role's pods are packed as densely as the best fitting pool allows, roles sharing pools do not
share nodes, and at most ``MAX_PODS`` pods go on a node.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainstack.policy.model import NODE_HEADROOM, Context, Finding, Level, NodePool, Resource, Rule
from trainstack.policy.pods import PodTemplate, Requests, pod_requests, pod_templates
from trainstack.policy.rules.placement import lands_on, short_of, usable

# The kubelet's default --max-pods (Kubernetes "Considerations for large clusters": no more than
# 110 pods per node): a pod that asks for nothing still takes one of a node's pod slots.
MAX_PODS = 110
SHAPES = "trainstack/infra/platform/instancetypes.py"


@dataclass(frozen=True)
class _Role:
    pod: PodTemplate
    need: Requests
    pools: tuple[NodePool, ...]  # the pools it may land on (selector and taints)

    @property
    def name(self) -> str:
        return self.pod.path.split(".")[2] if self.pod.path.count(".") >= 3 else self.pod.path

    def fitting(self, headroom: float) -> list[NodePool]:
        return [p for p in self.pools if p.sized and short_of(self.need, p, headroom) is None]

    def unsized(self) -> list[NodePool]:
        return [p for p in self.pools if not p.sized]


def per_node(need: Requests, pool: NodePool, headroom: float) -> int:
    """How many such pods one of the pool's nodes holds (``need`` fits it)."""
    room = usable(pool, headroom)
    counts = [
        math.floor(room.cpu / need.cpu) if need.cpu else MAX_PODS,
        math.floor(room.memory / need.memory) if need.memory else MAX_PODS,
        room.gpus // need.gpus if need.gpus else MAX_PODS,
    ]
    return max(1, min(*counts, MAX_PODS))


def _unknown(pools: Sequence[NodePool]) -> str:
    return "; ".join(
        f"pool {p.name}: {', '.join(p.instance_types) or 'its instance types'}" for p in pools
    )


def _unchecked(role: _Role, headroom: float) -> Iterator[Finding]:
    """A pod that fits no known pool but may land on one of unknown shape: not judged."""
    unsized = role.unsized()
    if unsized and not role.fitting(headroom):
        yield Finding(
            role.pod.path,
            f"whether a pod requesting {role.need.show()} fits a node is not checked: no shape "
            f"is known for the instance types of {_unknown(unsized)}",
            f"add the types' vCPUs, memory and GPUs to {SHAPES} (Alibaba Cloud's instance "
            "family pages), or use a listed type",
        )


def _outcome(ctx: Context) -> str:
    if ctx.gang_scheduler:
        return f"with gang scheduling ({ctx.gang_scheduler}) none of the job's pods ever start"
    return (
        "the pods past them stay Pending while the others start and wait for them (no gang "
        "scheduler: fine only for a job written to run with fewer replicas)"
    )


def _group(members: Sequence[_Role], ctx: Context, headroom: float) -> Iterator[Finding]:
    pools = members[0].pools
    if any(p.max_size is None for p in pools):
        return  # a platform stack from before maxSize was exported: nothing to count against
    needed = 0
    used: dict[str, NodePool] = {}
    for role in members:
        fitting = role.fitting(headroom)
        if not fitting:
            return  # pod-fits-node-pool, or _unchecked, says why
        needed += math.ceil(
            role.pod.replicas / max(per_node(role.need, p, headroom) for p in fitting)
        )
        used |= {p.name: p for p in fitting}
    available = sum(p.max_size or 0 for p in used.values())
    if needed <= available:
        return
    unsized = [p for p in pools if not p.sized]
    uncounted = f"; not counted, of unknown shape: {_unknown(unsized)}" if unsized else ""
    yield Finding(
        "spec",
        f"{', '.join(r.name for r in members)} need {needed} nodes of pools "
        f"{', '.join(sorted(used))}, whose maxSize allow {available}: {_outcome(ctx)}{uncounted}",
        "use fewer replicas, or smaller ones so more fit a node, or raise the pools' maxSize "
        f"in Pulumi.{ctx.env}.yaml",
    )


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if ctx.node_pools is None:
        return  # kubeconfig mode: the cluster's nodes are not the platform's to know
    headroom = float(config.get("headroom", NODE_HEADROOM))
    groups: dict[tuple[str, ...], list[_Role]] = {}
    for pod in pod_templates(resource.props):
        pools = tuple(p for p in ctx.node_pools if lands_on(pod.spec, p) is None)
        role = _Role(pod, pod_requests(pod.spec, ctx.defaults_of(pod.namespace)), pools)
        yield from _unchecked(role, headroom)
        if pools:
            groups.setdefault(tuple(p.name for p in pools), []).append(role)
    for members in groups.values():
        yield from _group(members, ctx, headroom)


RULE = Rule(
    id="job-fits-pools",
    description="All of a job's pods fit its node pools at once (pods per node times maxSize); "
    "pools of unknown instance types, whose fit cannot be checked, are named.",
    level=Level.ADVISORY,
    defaults={"headroom": NODE_HEADROOM},
    check=check,
    types=("kubernetes:",),
)
