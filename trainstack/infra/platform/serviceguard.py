"""Both modes: one ValidatingAdmissionPolicy, ``trainstack-team-services``, on Services in team
namespaces: only ClusterIP Services (headless ones included), and no ``externalIPs``.

A Service's ``externalIPs`` makes every node's kube-proxy send traffic for those addresses to the
Service's pods, so a team could capture traffic other pods send to any address it names
(CVE-2020-8554; Kubernetes recommends refusing the field by admission). Deny by default: trainstack
renders no Service itself, and KubeDL creates one headless ClusterIP Service per replica
(``clusterIP: None``, KubeDL v0.5.0 pkg/job_controller/service.go; the tests' stand-in of the
operator, tests/kubedl/expand.py, makes them too), so
LoadBalancer (a billed load balancer), NodePort (a port on every node) and ExternalName (a name
another pod may trust) are refused as well; the team quota holds load balancers and node ports
at 0 besides. The policy matches by the team label on the namespace, which only the platform sets
(namespaces are cluster-scoped: a team's Role cannot relabel its own).
"""

from __future__ import annotations

from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from trainstack.platformnames import TEAM_NAMESPACE_LABEL

POLICY_NAME = "trainstack-team-services"
ALLOWED_TYPES = ("ClusterIP",)  # headless is ClusterIP with clusterIP None

VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
        "message": "spec.externalIPs is refused in team namespaces: it captures traffic other "
        "pods send to those addresses (CVE-2020-8554)",
    },
    {
        "expression": "!has(object.spec.type) || object.spec.type in "
        + "["
        + ", ".join(f"'{t}'" for t in ALLOWED_TYPES)
        + "]",
        "message": "only ClusterIP Services (headless included) are admitted in team "
        "namespaces: trainstack and KubeDL create no other type",
    },
)


def policy_spec() -> dict[str, Any]:
    """The policy's spec as the API server reads it (camelCase)."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {
                "matchExpressions": [{"key": TEAM_NAMESPACE_LABEL, "operator": "Exists"}]
            },
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["services"],
                }
            ],
        },
        "validations": [dict(v) for v in VALIDATIONS],
    }


def build_service_guard(labels: dict[str, str], opts: pulumi.ResourceOptions) -> None:
    adm = k8s.admissionregistration.v1
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": POLICY_NAME, "labels": labels}
    policy = adm.ValidatingAdmissionPolicy(
        "service-guard",
        metadata=meta,
        # camelCase keys, as the API server reads them: the provider passes them through
        spec=cast(adm.ValidatingAdmissionPolicySpecArgsDict, policy_spec()),
        opts=opts,
    )
    adm.ValidatingAdmissionPolicyBinding(
        "service-guard",
        metadata=meta,
        spec={"policy_name": policy.metadata.name, "validation_actions": ["Deny"]},
        opts=opts,
    )
