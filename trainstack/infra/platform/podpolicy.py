"""Per team namespace: the pod admission policy (podguard.py) and its binding (Deny)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform.config_teams import Team
from trainstack.infra.platform.podguard import (
    POD_GUARD,
    PodRules,
    Workload,
    pod_rules,
    validations,
    variables,
    workloads,
)

COMPONENT = "trainstack:platform:PodGuards"
_LABELS = {"app.kubernetes.io/managed-by": "trainstack"}


def match_constraints(
    namespace: str, loads: Sequence[Workload]
) -> k8s.admissionregistration.v1.MatchResourcesArgsDict:
    return {
        "namespace_selector": {"match_labels": {names.NAMESPACE_NAME_LABEL: namespace}},
        "resource_rules": [
            {
                "api_groups": [w.group],
                "api_versions": [w.version],
                "operations": list(w.operations),
                "resources": [w.plural],
            }
            for w in loads
        ],
    }


def policy_spec(
    rules: PodRules, loads: Sequence[Workload]
) -> k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgsDict:
    return {
        "failure_policy": "Fail",
        "match_constraints": match_constraints(rules.namespace, loads),
        "variables": [{"name": v["name"], "expression": v["expression"]} for v in variables(loads)],
        "validations": [
            {"expression": v["expression"], "message": v["message"]} for v in validations(rules)
        ],
    }


class PodGuards(pulumi.ComponentResource):
    """Per team namespace: the pod admission policy and its binding (Deny)."""

    def __init__(
        self,
        name: str,
        teams: Sequence[Team],
        kubedl_kinds: Sequence[str],
        host_path: bool,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        trainjobs: bool = False,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        adm = k8s.admissionregistration.v1
        loads = workloads(kubedl_kinds, trainjobs=trainjobs)
        for team in teams:
            meta: k8s.meta.v1.ObjectMetaArgsDict = {
                "name": f"{POD_GUARD}-{team.namespace}",
                "labels": _LABELS,
            }
            policy = adm.ValidatingAdmissionPolicy(
                f"pod-guard-{team.name}",
                metadata=meta,
                spec=policy_spec(pod_rules(team.namespace, team.max_priority, host_path), loads),
                opts=child,
            )
            adm.ValidatingAdmissionPolicyBinding(
                f"pod-guard-{team.name}",
                metadata=meta,
                spec={"policy_name": policy.metadata.name, "validation_actions": ["Deny"]},
                opts=child,
            )
        self.register_outputs({})
