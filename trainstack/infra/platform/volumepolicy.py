"""Each team's volume guard on the cluster: the ValidatingAdmissionPolicy built from
volumeguard.py, its binding (Deny), and the parameters it reads.

The expressions are known when the platform is planned; what only the cloud knows (the NAS
address, the team's RAM role) is in a ConfigMap the binding names (``paramRef``), so a plan shows
the policy in full. The ConfigMaps live in the platform's admission namespace
(``platformnames.ADMISSION_NAMESPACE``), not in the team's: a team's Role may write ConfigMaps in
its own namespace (teamaccess.runner_rules) and would rewrite its own guard. A missing ConfigMap
refuses every request (``parameterNotFoundAction: Deny``).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform import podsecurity
from trainstack.infra.platform.volumeguard import GuardShape, TeamVolumes, params_data, validations

VOLUME_GUARD = "trainstack-team-volumes"
_LABELS = {"app.kubernetes.io/managed-by": "trainstack"}


def guard_name(namespace: str) -> str:
    """The team's policy, binding and parameter ConfigMap."""
    return f"{VOLUME_GUARD}-{namespace}"


def admission_namespace(opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    """The namespace of the guards' parameters. Nothing runs there: Pod Security restricted."""
    return k8s.core.v1.Namespace(
        "admission-namespace",
        metadata={
            "name": names.ADMISSION_NAMESPACE,
            "labels": {**_LABELS, **podsecurity.labels(podsecurity.Level.RESTRICTED)},
        },
        opts=opts,
    )


def policy_spec(
    shape: GuardShape, match: str
) -> k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgsDict:
    """The policy as registered: only requests ``match`` (CEL) holds for are checked, the team's
    runner's (teamaccess.guard_match); the PV binder and admins are unaffected."""
    return {
        "failure_policy": "Fail",
        "param_kind": {"api_version": "v1", "kind": "ConfigMap"},
        "match_constraints": {
            "resource_rules": [
                {
                    "api_groups": [""],
                    "api_versions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["persistentvolumes"],
                }
            ]
        },
        "match_conditions": [{"name": "team-runner", "expression": match}],
        "validations": [
            {"expression": v["expression"], "message": v["message"]} for v in validations(shape)
        ],
    }


def volume_guard(
    team: str,
    shape: GuardShape,
    match: str,
    volumes: pulumi.Output[TeamVolumes],
    namespace: k8s.core.v1.Namespace,
    opts: pulumi.ResourceOptions,
) -> None:
    """The team's policy, its parameters in ``namespace`` and the binding between them."""
    adm = k8s.admissionregistration.v1
    name = guard_name(shape.namespace)
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": name, "labels": _LABELS}
    params = k8s.core.v1.ConfigMap(
        f"volume-guard-params-{team}",
        metadata={"name": name, "namespace": namespace.metadata.name, "labels": _LABELS},
        data=volumes.apply(params_data),
        opts=opts,
    )
    policy = adm.ValidatingAdmissionPolicy(
        f"volume-guard-{team}", metadata=meta, spec=policy_spec(shape, match), opts=opts
    )
    adm.ValidatingAdmissionPolicyBinding(
        f"volume-guard-{team}",
        metadata=meta,
        spec={
            "policy_name": policy.metadata.name,
            "validation_actions": ["Deny"],
            "param_ref": {
                "name": name,
                "namespace": names.ADMISSION_NAMESPACE,
                "parameter_not_found_action": "Deny",
            },
        },
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[params])),
    )
