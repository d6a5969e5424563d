"""team-quota: a job's total requests (every replica) fit its team's ResourceQuota; a job larger
than the quota would be admitted pod by pod and never start as a whole. The same for its
ephemeral storage (requests and limits, a container stating none at its LimitRange defaults),
and a run's claim fits the team's storage and claim quota on its own.

On a Kueue environment (docs/queues.md) team-quota also asks Kueue's question, with Kueue's
numbers (the platform's `kueueQueues`): each role's pods go to the first flavor (node pool)
whose labels and taints admit them, as Kueue's flavor assigner tries them in order; a job that
needs more of a flavor than the team's quota there plus what the cohort lends (and its
borrowing limit allows) is refused, as Kueue would leave it pending for good (ExceedsMaxQuota:
Kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:1330-1358,
pkg/cache/scheduler/resource_node.go:129-140). queue-borrowing, advisory, notes a job that fits
only by borrowing: it starts only while other teams leave their quota idle, and may be preempted
when they reclaim it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.infra.platform import queues as qmodel
from trainstack.infra.platform.queues import Flavor
from trainstack.policy.model import ContainerDefaults, Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import Requests, amount, gib, pod_requests, pod_templates
from trainstack.policy.rules.placement import _expression_matches, tolerates

CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
EPHEMERAL = "ephemeral-storage"


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if resource.type == CLAIM:
        yield from _claim(resource, ctx)
        return
    yield from _compute(resource, ctx)
    yield from _ephemeral(resource, ctx)
    fit = queue_fit(resource, ctx)
    if fit is not None:
        yield from fit.never


def check_borrowing(
    resource: Resource, ctx: Context, config: Mapping[str, Any]
) -> Iterator[Finding]:
    fit = queue_fit(resource, ctx)
    if fit is not None:
        yield from fit.borrowing


@dataclass(frozen=True)
class QueueFit:
    never: tuple[Finding, ...]
    borrowing: tuple[Finding, ...]


def _flavor_admits(pod: Mapping[str, Any], flavor: Flavor) -> bool:
    """Kueue's flavor match: the flavor's node labels against the pod's node selector and
    required affinity, only for the keys the flavor has; every taint of it tolerated."""
    labels = flavor.node_labels
    for key, value in (pod.get("nodeSelector") or {}).items():
        if key in labels and labels[key] != str(value):
            return False
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = [
        [e for e in t.get("matchExpressions") or () if e.get("key") in labels]
        for t in required.get("nodeSelectorTerms") or ()
    ]
    if terms and not any(all(_expression_matches(e, labels) for e in t) for t in terms):
        return False
    return all(tolerates(pod, taint) for taint in flavor.node_taints)


_AMOUNTS = ((qmodel.CPU, "cpu"), (qmodel.MEMORY, "memory"), (qmodel.GPU, "gpus"))


def _show(res: str, value: float) -> str:
    return gib(value) if res == qmodel.MEMORY else f"{value:g}"


def queue_fit(resource: Resource, ctx: Context) -> QueueFit | None:
    """Where Kueue would admit the job's pods, and whether it ever could."""
    model = qmodel.QueueModel.from_output(ctx.queues) if ctx.queues else None
    if model is None:
        return None
    pods = list(pod_templates(resource.props))
    team = ctx.team_of(pods[0].namespace) if pods else None
    if team is None or team not in model.teams:
        return None
    used: dict[str, dict[str, float]] = {
        f.name: {r: 0.0 for r, _ in _AMOUNTS} for f in model.flavors
    }
    never: list[Finding] = []
    borrowing: list[Finding] = []
    fix = (
        "use fewer or smaller replicas, or raise the team's quota (trainstack:teams) or what it "
        f"may borrow (kueue:borrowingLimit) in Pulumi.{ctx.env}.yaml"
    )
    for pod in pods:
        r = pod_requests(pod.spec, ctx.defaults_of(pod.namespace)).times(pod.replicas)
        need = {qmodel.CPU: r.cpu, qmodel.MEMORY: r.memory, qmodel.GPU: float(r.gpus)}
        flavors = [f for f in model.flavors if _flavor_admits(pod.spec, f)]
        if not flavors:
            never.append(
                Finding(
                    pod.path,
                    "no resource flavor (node pool) of the team's queue admits these pods "
                    "(Kueue: NoMatchingFlavor)",
                    "select or tolerate a pool the queue has",
                )
            )
            continue

        def after(f: str, n: dict[str, float] = need) -> dict[str, float]:
            return {res: used[f][res] + n[res] for res, _ in _AMOUNTS}

        within = next(
            (
                f.name
                for f in flavors
                if all(
                    after(f.name)[res] <= model.nominal(team, f.name, res) for res, _ in _AMOUNTS
                )
            ),
            None,
        )
        borrow = next(
            (
                f.name
                for f in flavors
                if all(
                    after(f.name)[res] <= model.maximum(team, f.name, res) for res, _ in _AMOUNTS
                )
            ),
            None,
        )
        chosen = within or borrow or flavors[0].name
        total = after(chosen)
        for res, _ in _AMOUNTS:
            used[chosen][res] = total[res]
        words = [
            f"{label} {_show(res, total[res])} > {_show(res, model.nominal(team, chosen, res))}"
            f" (at most {_show(res, model.maximum(team, chosen, res))} with what the cohort "
            "lends)"
            for res, label in _AMOUNTS
            if total[res] > model.nominal(team, chosen, res)
        ]
        if within is not None:
            continue
        where = f"team {team!r}'s queue, flavor {chosen!r}"
        if borrow is None:
            never.append(
                Finding(
                    pod.path,
                    f"needs more than {where} can ever admit: {'; '.join(words)}; Kueue would "
                    "leave it pending for good (ExceedsMaxQuota)",
                    fix,
                )
            )
        else:
            borrowing.append(
                Finding(
                    pod.path,
                    f"fits {where} only by borrowing: {'; '.join(words)}; it starts while "
                    "other teams leave that quota idle and may be preempted when they reclaim it",
                    "fine if it may wait and be preempted; else use fewer or smaller replicas",
                )
            )
    return QueueFit(tuple(never), tuple(borrowing))


def _claim(resource: Resource, ctx: Context) -> Iterator[Finding]:
    meta = resource.props.get("metadata") or {}
    team = ctx.team_of(meta.get("namespace"))
    quota = ctx.quotas.get(team) if team else None
    if quota is None:
        return
    requests = ((resource.props.get("spec") or {}).get("resources") or {}).get("requests") or {}
    size = amount(requests.get("storage", 0))
    fix = f"raise the team's quota in trainstack:teams of Pulumi.{ctx.env}.yaml"
    if quota.claims is not None and quota.claims < 1:
        yield Finding("spec", f"team {team!r}'s quota admits no claims", fix)
    if quota.storage is not None and size > quota.storage:
        yield Finding(
            "spec.resources.requests.storage",
            f"{gib(size)} over team {team!r}'s storage quota {gib(quota.storage)}",
            fix,
        )


def _pod_ephemeral(
    spec: Mapping[str, Any], defaults: ContainerDefaults | None
) -> tuple[float, float]:
    """(requests, limits) of ephemeral storage as the quota counts a pod: containers summed, or
    the largest init container; one that states none at the LimitRange's defaults."""

    def of(c: Any, key: str, default: float) -> float:
        res = c.get("resources") if isinstance(c, Mapping) else None
        value = ((res or {}).get(key) or {}).get(EPHEMERAL) if isinstance(res, Mapping) else None
        return default if value is None else amount(value)

    req = defaults.ephemeral_storage if defaults else 0.0
    lim = defaults.limit_ephemeral_storage if defaults else 0.0
    main = [(of(c, "requests", req), of(c, "limits", lim)) for c in spec.get("containers") or ()]
    init = [
        (of(c, "requests", req), of(c, "limits", lim)) for c in spec.get("initContainers") or ()
    ]
    return (
        max([sum(r for r, _ in main), *(r for r, _ in init)]),
        max([sum(x for _, x in main), *(x for _, x in init)]),
    )


def _ephemeral(resource: Resource, ctx: Context) -> Iterator[Finding]:
    requested = limited = 0.0
    namespace: str | None = None
    for pod in pod_templates(resource.props):
        r, x = _pod_ephemeral(pod.spec, ctx.defaults_of(pod.namespace))
        requested, limited = requested + r * pod.replicas, limited + x * pod.replicas
        namespace = pod.namespace
    team = ctx.team_of(namespace)
    quota = ctx.quotas.get(team) if team else None
    if quota is None:
        return
    for what, total, cap in (
        ("requests", requested, quota.ephemeral_storage),
        ("limits", limited, quota.limit_ephemeral_storage),
    ):
        if cap is not None and total > cap:
            yield Finding(
                "spec",
                f"all replicas together have {EPHEMERAL} {what} of {gib(total)}, over team "
                f"{team!r}'s quota {gib(cap)}",
                "use fewer replicas, or raise the team's quota (or lower its container "
                f"defaults) in trainstack:teams of Pulumi.{ctx.env}.yaml",
            )


@dataclass(frozen=True)
class JobRequests:
    requests: Requests  # every replica's together
    pods: int
    namespace: str | None


def job_requests(resource: Resource, ctx: Context) -> JobRequests:
    """What a job asks for, every replica together, as its quota counts it (the team-budget rule
    prices the same)."""
    total = Requests(0.0, 0.0, 0)
    namespace: str | None = None
    count = 0
    for pod in pod_templates(resource.props):
        # a container without requests is admitted at its team's LimitRange defaults
        total = total + pod_requests(pod.spec, ctx.defaults_of(pod.namespace)).times(pod.replicas)
        count += pod.replicas
        namespace = pod.namespace
    return JobRequests(total, count, namespace)


def _compute(resource: Resource, ctx: Context) -> Iterator[Finding]:
    job = job_requests(resource, ctx)
    total, count, namespace = job.requests, job.pods, job.namespace
    team = ctx.team_of(namespace)
    quota = ctx.quotas.get(team) if team else None
    if quota is None or (total == Requests(0.0, 0.0, 0) and quota.pods is None):
        return
    over = [
        what
        for what, ok in (
            (f"cpu {total.cpu:g} > {quota.cpu:g}", total.cpu <= quota.cpu),
            (f"memory {gib(total.memory)} > {gib(quota.memory)}", total.memory <= quota.memory),
            (f"gpus {total.gpus} > {quota.gpus}", total.gpus <= quota.gpus),
            # the quota's pod count refuses the pods past it just the same
            (
                f"pods {count} > {quota.pods}",
                quota.pods is None or count <= quota.pods,
            ),
        )
        if not ok
    ]
    if over:
        yield Finding(
            "spec",
            f"all replicas together request {total.show()}, over team "
            f"{team!r}'s quota ({'; '.join(over)})",
            "use fewer or smaller replicas, or raise the team's quota in "
            f"trainstack:teams of Pulumi.{ctx.env}.yaml",
        )


RULE = Rule(
    id="team-quota",
    description="A job's requests, all replicas together, are within its team's quota.",
    level=Level.MANDATORY,
    defaults={},
    check=check,
    types=("kubernetes:",),
)

BORROWING = Rule(
    id="queue-borrowing",
    description="On a Kueue environment, a job that fits its team's queue only by borrowing "
    "from the cohort is noted: it waits for idle quota and may be preempted.",
    level=Level.ADVISORY,
    defaults={},
    check=check_borrowing,
    types=("kubernetes:",),
)
