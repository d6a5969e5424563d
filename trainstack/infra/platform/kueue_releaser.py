"""On a Kueue environment: the finalizer releaser (trainstack.kueue.releaser says why it exists)
beside Kueue's controller, and the admission policy that holds it to its one change.

Its source ships in a ConfigMap, started with `python3` in the environment's Python image
(`kueue:releaserImage`); a change of the source rolls the pod (its hash is in the template).
Its service account may read and patch pods anywhere (RBAC cannot narrow a patch), so the
policy `trainstack-kueue-releaser` refuses every update by that account but the removal of
Kueue's finalizer from a pod the releaser itself would release: the pod's spec, labels,
annotations, owners and other finalizers stay as they were.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform.config_ack import SYSTEM_TAINT
from trainstack.kubedl import KINDS
from trainstack.kueue import api, releaser

NAME = "trainstack-kueue-releaser"
POLICY_NAME = NAME
SOURCE = Path(releaser.__file__)
SCRIPT = "releaser.py"
MOUNT = "/opt/trainstack"


def owner_groups() -> tuple[str, ...]:
    """The API groups of the KubeDL kinds trainstack renders: the makers whose pods are
    released."""
    return tuple(sorted({k.api_version.split("/")[0] for k in KINDS.values() if k.replicas_key}))


def rules() -> releaser.Rules:
    return releaser.Rules(api.POD_FINALIZER, api.POD_GROUP_NAME_LABEL, owner_groups())


def arguments() -> list[str]:
    r = rules()
    return [
        f"--finalizer={r.finalizer}",
        f"--group-label={r.group_label}",
        *(f"--owner-group={g}" for g in r.owner_groups),
    ]


def username(namespace: str) -> str:
    return f"system:serviceaccount:{namespace}:{NAME}"


def _same(field: str) -> str:
    """`field` of the metadata unchanged, absent on both sides included."""
    return (
        f"has(object.metadata.{field}) == has(oldObject.metadata.{field}) && "
        f"(!has(object.metadata.{field}) || object.metadata.{field} == oldObject.metadata.{field})"
    )


def validations() -> list[dict[str, str]]:
    """What the releaser's account may do to a pod: exactly what `releaser.releasable` and
    `releaser.patch` do, as CEL."""
    r = rules()
    fin = f"'{r.finalizer}'"
    return [
        {
            "expression": "has(oldObject.metadata.deletionTimestamp)",
            "message": "the releaser changes only pods that are being deleted",
        },
        {
            "expression": f"has(oldObject.metadata.labels) && '{r.group_label}' in "
            "oldObject.metadata.labels && has(oldObject.metadata.ownerReferences) && "
            "oldObject.metadata.ownerReferences.exists(o, has(o.controller) && o.controller "
            "&& (" + " || ".join(f"o.apiVersion.startsWith('{g}/')" for g in r.owner_groups) + "))",
            "message": "the releaser changes only pods of a Kueue group that a KubeDL job "
            f"({', '.join(r.owner_groups)}) controls",
        },
        {
            "expression": "(has(oldObject.status.phase) && oldObject.status.phase in "
            f"{list(releaser.TERMINAL_PHASES)!r}) || !has(oldObject.spec.nodeName) || "
            "oldObject.spec.nodeName == ''",
            "message": "the releaser changes only pods that will not run again",
        },
        {
            "expression": f"has(oldObject.metadata.finalizers) && {fin} in "
            "oldObject.metadata.finalizers && (has(object.metadata.finalizers) ? "
            "object.metadata.finalizers : []) == "
            f"oldObject.metadata.finalizers.filter(f, f != {fin})",
            "message": f"the releaser removes {r.finalizer} and no other finalizer",
        },
        {
            "expression": " && ".join(
                [
                    _same("labels"),
                    _same("annotations"),
                    _same("ownerReferences"),
                    "object.spec == oldObject.spec",
                ]
            ),
            "message": "the releaser changes nothing but the finalizer",
        },
    ]


def policy_spec(namespace: str) -> dict[str, Any]:
    """The policy's spec as the API server reads it (camelCase): every pod update the
    releaser's account makes, anywhere."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["pods"],
                }
            ]
        },
        "matchConditions": [
            {
                "name": "by-the-releaser",
                "expression": f"request.userInfo.username == '{username(namespace)}'",
            }
        ],
        "validations": validations(),
    }


def source() -> str:
    return SOURCE.read_text(encoding="utf-8")


def build_releaser(
    namespace: str, image: str, opts: pulumi.ResourceOptions
) -> k8s.apps.v1.Deployment:
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "trainstack"}
    text = source()
    digest = hashlib.sha256(text.encode()).hexdigest()
    account = k8s.core.v1.ServiceAccount(
        NAME, metadata={"name": NAME, "namespace": namespace, "labels": labels}, opts=opts
    )
    role = k8s.rbac.v1.ClusterRole(
        NAME,
        metadata={"name": NAME, "labels": labels},
        rules=[
            {"api_groups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]}
        ],
        opts=opts,
    )
    binding = k8s.rbac.v1.ClusterRoleBinding(
        NAME,
        metadata={"name": NAME, "labels": labels},
        role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])),
    )
    adm = k8s.admissionregistration.v1
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": POLICY_NAME, "labels": labels}
    policy = adm.ValidatingAdmissionPolicy(
        "kueue-releaser-guard",
        metadata=meta,
        # camelCase keys, as the API server reads them: the provider passes them through
        spec=cast(adm.ValidatingAdmissionPolicySpecArgsDict, policy_spec(namespace)),
        opts=opts,
    )
    guard = adm.ValidatingAdmissionPolicyBinding(
        "kueue-releaser-guard",
        metadata=meta,
        spec={"policy_name": policy.metadata.name, "validation_actions": ["Deny"]},
        opts=opts,
    )
    config = k8s.core.v1.ConfigMap(
        NAME,
        metadata={"name": NAME, "namespace": namespace, "labels": labels},
        data={SCRIPT: text},
        opts=opts,
    )
    selector = {"app.kubernetes.io/name": NAME}
    return k8s.apps.v1.Deployment(
        NAME,
        metadata={"name": NAME, "namespace": namespace, "labels": labels},
        spec={
            "replicas": 1,
            # Two releasers would only race to the same patches, which the test op makes safe;
            # one at a time keeps the log readable.
            "strategy": {"type": "Recreate"},
            "selector": {"match_labels": selector},
            "template": {
                "metadata": {
                    "labels": {**labels, **selector},
                    "annotations": {"trainstack.io/source-sha256": digest},
                },
                "spec": _pod(image),
            },
        },
        # The guard first: the releaser never runs unguarded.
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[account, binding, guard, config])
        ),
    )


def _pod(image: str) -> k8s.core.v1.PodSpecArgsDict:
    return {
        "service_account_name": NAME,
        # Platform software: it may run on the system pool (config_ack.SYSTEM_TAINT).
        "tolerations": [{"key": SYSTEM_TAINT[0], "operator": "Exists"}],
        "security_context": {
            "run_as_non_root": True,
            "run_as_user": 65534,
            "run_as_group": 65534,
            "seccomp_profile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "releaser",
                "image": image,
                "image_pull_policy": "IfNotPresent",
                "command": ["python3", "-u", f"{MOUNT}/{SCRIPT}", *arguments()],
                "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
                "security_context": {
                    "allow_privilege_escalation": False,
                    "read_only_root_filesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "volume_mounts": [{"name": "source", "mount_path": MOUNT, "read_only": True}],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"memory": "128Mi"},
                },
            }
        ],
        "volumes": [{"name": "source", "config_map": {"name": NAME}}],
    }
