"""team-quota: a job's total requests (every replica) fit its team's ResourceQuota; a job larger
than the quota would be admitted pod by pod and never start as a whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import Requests, gib, pod_requests, pod_templates


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
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
