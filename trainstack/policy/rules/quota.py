"""team-quota: a job's total requests (every replica) fit its team's ResourceQuota; a job larger
than the quota would be admitted pod by pod and never start as a whole. The same for its
ephemeral storage (requests and limits, a container stating none at its LimitRange defaults),
and a run's claim fits the team's storage and claim quota on its own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import ContainerDefaults, Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import Requests, amount, gib, pod_requests, pod_templates

CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
EPHEMERAL = "ephemeral-storage"


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if resource.type == CLAIM:
        yield from _claim(resource, ctx)
        return
    yield from _compute(resource, ctx)
    yield from _ephemeral(resource, ctx)


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


def _compute(resource: Resource, ctx: Context) -> Iterator[Finding]:
    total = Requests(0.0, 0.0, 0)
    namespace: str | None = None
    count = 0
    for pod in pod_templates(resource.props):
        # a container without requests is admitted at its team's LimitRange defaults
        total = total + pod_requests(pod.spec, ctx.defaults_of(pod.namespace)).times(pod.replicas)
        count += pod.replicas
        namespace = pod.namespace
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
