"""Both modes: KubeDL at a pinned version — its CRDs, then its controller.

The Helm chart's CRDs are stale (they lack ``schedulingPolicy.queue``/``priorityClassName``), so the
CRDs come from the release's ``config/crd/bases`` at ``kubedl:repo``/``kubedl:version``. They are
fetched by the Kubernetes provider at deploy time (``yaml/v2.ConfigGroup`` resolves URLs in the
provider, not in this process), so nothing is downloaded when the program is tested or planned.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform.config import KubeDLConfig

SERVICE_ACCOUNT = "kubedl"
# Read by KubeDL's workload gate; it overrides the --workloads flag and, unlike that Go flag,
# cannot be rejected by the pflag parser, so the enabled set is passed this way.
WORKLOADS_ENV = "WORKLOADS_ENABLE"

_CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]
_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {"api_groups": [""], "resources": ["pods", "pods/log", "services", "configmaps", "events",
                                       "persistentvolumeclaims", "persistentvolumes"],
     "verbs": _CRUD},
    {"api_groups": [""], "resources": ["pods/status", "services/status", "configmaps/status"],
     "verbs": ["get", "patch", "update"]},
    {"api_groups": [""], "resources": ["nodes", "namespaces", "resourcequotas"],
     "verbs": ["get", "list", "watch"]},
    {"api_groups": ["apps"], "resources": ["deployments"], "verbs": _CRUD},
    {"api_groups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": _CRUD},
    {"api_groups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _CRUD},
    {"api_groups": ["training.kubedl.io", "inference.kubedl.io", "apps.kubedl.io",
                    "model.kubedl.io", "cache.kubedl.io", "serving.kubedl.io",
                    "notebook.kubedl.io"],
     "resources": ["*"], "verbs": _CRUD},
    # Gang schedulers' PodGroups (coscheduling, volcano, kube-batch).
    {"api_groups": ["scheduling.sigs.k8s.io", "scheduling.x-k8s.io", "scheduling.volcano.sh",
                    "scheduling.incubator.k8s.io"],
     "resources": ["podgroups", "queues"], "verbs": _CRUD},
]


@dataclass(frozen=True)
class KubeDL:
    crds: k8s.yaml.v2.ConfigGroup
    controller: k8s.apps.v1.Deployment


def controller_args(cfg: KubeDLConfig) -> list[str]:
    args = ["--enable-leader-election=true"]
    if cfg.gang_scheduler:
        args.append(f"--gang-scheduler-name={cfg.gang_scheduler}")
    return args


def install_kubedl(cfg: KubeDLConfig, opts: pulumi.ResourceOptions) -> KubeDL:
    labels = {"app.kubernetes.io/name": "kubedl", "app.kubernetes.io/version": cfg.version,
              "app.kubernetes.io/managed-by": "trainstack"}
    namespace = k8s.core.v1.Namespace(
        "kubedl-namespace", metadata={"name": cfg.namespace, "labels": labels}, opts=opts)
    crds = k8s.yaml.v2.ConfigGroup("kubedl-crds", files=list(cfg.crd_urls()), opts=opts)
    account = k8s.core.v1.ServiceAccount(
        "kubedl-service-account",
        metadata={"name": SERVICE_ACCOUNT, "namespace": namespace.metadata.name, "labels": labels},
        opts=opts)
    role = k8s.rbac.v1.ClusterRole(
        "kubedl-role", metadata={"name": "kubedl-manager", "labels": labels}, rules=_RULES,
        opts=opts)
    binding = k8s.rbac.v1.ClusterRoleBinding(
        "kubedl-role-binding", metadata={"name": "kubedl-manager", "labels": labels},
        role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                  "name": role.metadata.name},
        subjects=[{"kind": "ServiceAccount", "name": account.metadata.name,
                   "namespace": namespace.metadata.name}],
        opts=opts)
    selector = {"app.kubernetes.io/name": "kubedl"}
    controller = k8s.apps.v1.Deployment(
        "kubedl-controller",
        metadata={"name": "kubedl", "namespace": namespace.metadata.name, "labels": labels},
        spec={
            "replicas": cfg.replicas,
            "selector": {"match_labels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "service_account_name": SERVICE_ACCOUNT,
                    "containers": [{
                        "name": "kubedl-manager",
                        "image": cfg.image,
                        "image_pull_policy": "IfNotPresent",
                        "args": controller_args(cfg),
                        "env": [{"name": WORKLOADS_ENV, "value": ",".join(cfg.workloads)}],
                        "ports": [{"name": "metrics", "container_port": 8080}],
                        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                                      "limits": {"cpu": "2", "memory": "2Gi"}},
                    }],
                },
            },
        },
        # The controller looks its CRDs up at start; create them (and its rights) first.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[crds, binding])),
    )
    return KubeDL(crds=crds, controller=controller)
