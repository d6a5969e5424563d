"""Both modes: one namespace per team, each with a ResourceQuota, and the run PriorityClasses."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra import names
from trainstack.infra.platform.config import Team

TEAM_LABEL = "trainstack.dev/team"


def build_team_namespaces(teams: tuple[Team, ...], opts: pulumi.ResourceOptions
                          ) -> dict[str, k8s.core.v1.Namespace]:
    namespaces: dict[str, k8s.core.v1.Namespace] = {}
    for team in teams:
        ns = k8s.core.v1.Namespace(
            f"ns-{team.name}",
            metadata={"name": team.namespace, "labels": {
                TEAM_LABEL: team.name, "app.kubernetes.io/managed-by": "trainstack"}},
            opts=opts)
        hard = {"requests.cpu": team.quota.cpu, "requests.memory": team.quota.memory,
                "requests.nvidia.com/gpu": str(team.quota.gpu)}
        if team.quota.pods is not None:
            hard["pods"] = str(team.quota.pods)
        k8s.core.v1.ResourceQuota(
            f"quota-{team.name}",
            metadata={"name": "trainstack-quota", "namespace": ns.metadata.name,
                      "labels": {TEAM_LABEL: team.name}},
            spec={"hard": hard},
            opts=opts)
        namespaces[team.name] = ns
    return namespaces


def build_priority_classes(opts: pulumi.ResourceOptions) -> list[k8s.scheduling.v1.PriorityClass]:
    """``trainstack-priority-1`` .. ``-9``: the names the renderer writes into every job."""
    return [
        k8s.scheduling.v1.PriorityClass(
            f"priority-{p}",
            metadata={"name": names.priority_class_name(p)},
            value=names.priority_class_value(p),
            global_default=False,
            preemption_policy="PreemptLowerPriority",
            description=f"trainstack run priority {p} (1 lowest, 9 highest)",
            opts=opts)
        for p in names.PRIORITIES
    ]
