"""What Kubeflow Trainer v2.3.0's and JobSet v0.12.0's release manifests install, as facts the
platform builds its own objects from (trainer.py): the CRD files, the controllers' images, names,
ports and ClusterRoles, and the webhook configurations their in-process certificate managers
fill in.

Paths are in github.com/kubeflow/trainer at tag v2.3.0 (`Trainer v2.3.0 <path>:<line>`) and
github.com/kubernetes-sigs/jobset at tag v0.12.0 (`JobSet v0.12.0 <path>:<line>`); JobSet's
release manifest is its config/default kustomization, which prefixes every name with `jobset-`
and puts it in `jobset-system` (config/default/kustomization.yaml:2, 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_kubernetes as k8s

from trainstack.infra.platform.kubedl_source import CrdRelease
from trainstack.platformnames import JOBSET_CONFIG_NS
from trainstack.trainer.backend import Operator
from trainstack.trainer.versions import JOBSET_VERSION, TRAINER_VERSION

# The Trainer install's config keys (`trainer:version`, `trainer:crdSource`, `trainer:image`,
# `trainer:namespace`) are named after the operator that needs them.
TRAINER_CONFIG_NS = Operator.TRAINER.value

# Trainer v2.3.0 manifests/base/crds/kustomization.yaml:17-20
TRAINER_RELEASE = CrdRelease(
    name="trainer",
    title="Kubeflow Trainer",
    config_ns=TRAINER_CONFIG_NS,
    lock_name="trainer.lock.json",
    release_path="manifests/base/crds",
    crds={
        "ClusterTrainingRuntime": "trainer.kubeflow.org_clustertrainingruntimes.yaml",
        "TrainingRuntime": "trainer.kubeflow.org_trainingruntimes.yaml",
        "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    },
    repository="kubeflow/trainer",
)
# JobSet v0.12.0 config/components/crd/kustomization.yaml (one CRD, bases/jobset.x-k8s.io_jobsets)
JOBSET_RELEASE = CrdRelease(
    name="jobset",
    title="JobSet",
    config_ns=JOBSET_CONFIG_NS,
    lock_name="jobset.lock.json",
    release_path="config/components/crd/bases",
    crds={"JobSet": "jobset.x-k8s.io_jobsets.yaml"},
    repository="kubernetes-sigs/jobset",
)

# Trainer v2.3.0 manifests/overlays/manager/kustomization.yaml:30-32 (the manager's tag) and
# JobSet's as Trainer installs it, from registry.k8s.io (third-party/jobset/kustomization.yaml:
# 21-24). Tags, as the releases ship them: an environment pins a digest (trainer:image).
TRAINER_UPSTREAM_IMAGE = f"ghcr.io/kubeflow/trainer/trainer-controller-manager:{TRAINER_VERSION}"
JOBSET_UPSTREAM_IMAGE = f"registry.k8s.io/jobset/jobset:{JOBSET_VERSION}"

_CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]
_WATCH = ["get", "list", "watch"]
_WEBHOOK_CONFIGS = ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration: its name, the service path, the resources and
    operations, and an object selector when the release sets one."""

    name: str
    path: str
    group: str
    version: str
    resource: str
    operations: tuple[str, ...]
    selector: tuple[str, str, tuple[str, ...]] | None = None  # key, operator, values


@dataclass(frozen=True)
class Controller:
    """One controller as its release deploys it."""

    title: str
    namespace: str
    deployment: str
    container: str
    service_account: str
    cluster_role: str
    rules: tuple[k8s.rbac.v1.PolicyRuleArgsDict, ...]
    webhook_service: str
    webhook_secret: str
    config_map: str
    # The controller's Configuration file, mounted at /controller_manager_config.yaml.
    config: str
    webhook_port: int
    health_port: int
    mutating: tuple[str, tuple[Webhook, ...]]
    validating: tuple[str, tuple[Webhook, ...]]
    selector: tuple[tuple[str, str], ...]


_TJ = ("trainer.kubeflow.org", "v1alpha1")
_TRAINER_WEBHOOK_OFF = ("trainer.kubeflow.org/webhook-validation", "NotIn", ("disabled",))

TRAINER = Controller(
    title="Kubeflow Trainer",
    # manifests/overlays/manager/kustomization.yaml:19, namespace.yaml
    namespace="kubeflow-system",
    # manifests/base/manager/manager.yaml:19, 38, 85
    deployment="kubeflow-trainer-controller-manager",
    container="manager",
    service_account="kubeflow-trainer-controller-manager",
    cluster_role="kubeflow-trainer-controller-manager",
    # manifests/base/rbac/role.yaml:20-124
    rules=(
        {
            "api_groups": [""],
            "resources": ["configmaps", "secrets"],
            "verbs": ["create", "get", "list", "patch", "update", "watch"],
        },
        {"api_groups": [""], "resources": ["limitranges"], "verbs": _WATCH},
        {
            "api_groups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "patch", "update", "watch"],
        },
        {
            "api_groups": ["admissionregistration.k8s.io"],
            "resources": _WEBHOOK_CONFIGS,
            "verbs": ["get", "list", "update", "watch"],
        },
        {
            "api_groups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["create", "get", "list", "update"],
        },
        {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _CRUD},
        {"api_groups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": _WATCH},
        {
            "api_groups": ["scheduling.volcano.sh", "scheduling.x-k8s.io"],
            "resources": ["podgroups"],
            "verbs": ["create", "get", "list", "patch", "update", "watch"],
        },
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": ["clustertrainingruntimes", "trainingruntimes", "trainjobs"],
            "verbs": ["get", "list", "patch", "update", "watch"],
        },
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": [
                "clustertrainingruntimes/finalizers",
                "trainingruntimes/finalizers",
                "trainjobs/finalizers",
                "trainjobs/status",
            ],
            "verbs": ["get", "patch", "update"],
        },
    ),
    # manifests/base/manager/manager.yaml:92-110, controller_manager_config.yaml:49-53
    webhook_service="kubeflow-trainer-controller-manager",
    webhook_secret="kubeflow-trainer-webhook-cert",
    # manifests/base/manager/kustomization.yaml:23-26, manager_config_patch.yaml:11-22
    config_map="kubeflow-trainer-config",
    # manifests/base/manager/controller_manager_config.yaml:15-63 (the status server left out:
    # nothing in trainstack reads it)
    config=(
        "apiVersion: config.trainer.kubeflow.org/v1alpha1\nkind: Configuration\n"
        "health:\n  healthProbeBindAddress: :8081\n  readinessEndpointName: readyz\n"
        "  livenessEndpointName: healthz\nmetrics:\n  bindAddress: :8443\n  secureServing: true\n"
        'webhook:\n  port: 9443\n  host: ""\nleaderElection:\n  leaderElect: true\n'
        "  resourceName: trainer.kubeflow.org\ncertManagement:\n  enable: true\n"
        "  webhookServiceName: kubeflow-trainer-controller-manager\n"
        "  webhookSecretName: kubeflow-trainer-webhook-cert\n"
    ),
    webhook_port=9443,
    health_port=8081,
    # manifests/base/webhook/manifests.yaml:3-93, patch_mutating.yaml, patch_validating.yaml:
    # the names the certificate manager injects its CA into.
    mutating=(
        "defaulter.trainer.kubeflow.org",
        (
            Webhook(
                "defaulter.trainjob.trainer.kubeflow.org",
                "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
                *_TJ,
                "trainjobs",
                ("CREATE", "UPDATE"),
            ),
        ),
    ),
    validating=(
        "validator.trainer.kubeflow.org",
        (
            Webhook(
                "validator.clustertrainingruntime.trainer.kubeflow.org",
                "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
                *_TJ,
                "clustertrainingruntimes",
                ("CREATE", "UPDATE"),
                _TRAINER_WEBHOOK_OFF,
            ),
            Webhook(
                "validator.trainingruntime.trainer.kubeflow.org",
                "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
                *_TJ,
                "trainingruntimes",
                ("CREATE", "UPDATE"),
                _TRAINER_WEBHOOK_OFF,
            ),
            Webhook(
                "validator.trainjob.trainer.kubeflow.org",
                "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
                *_TJ,
                "trainjobs",
                ("CREATE", "UPDATE"),
            ),
        ),
    ),
    selector=(
        ("app.kubernetes.io/name", "trainer"),
        ("app.kubernetes.io/component", "manager"),
    ),
)

_JS = ("jobset.x-k8s.io", "v1alpha2")
_JOBSET_PODS = ("jobset.sigs.k8s.io/jobset-name", "Exists", ())

JOBSET = Controller(
    title="JobSet",
    # config/default/kustomization.yaml:2, 9; pkg/util/cert/cert.go:29
    namespace="jobset-system",
    # config/components/manager/manager.yaml:17, 72, 99 (with the jobset- prefix)
    deployment="jobset-controller-manager",
    container="manager",
    service_account="jobset-controller-manager",
    cluster_role="jobset-manager-role",
    # config/components/rbac/role.yaml:6-112, with the namespaced leader_election_role.yaml and
    # manager_secrets_role.yaml rights (leases, the certificate Secret) granted cluster-wide.
    rules=(
        {"api_groups": [""], "resources": ["nodes"], "verbs": _WATCH},
        {
            "api_groups": [""],
            "resources": ["persistentvolumeclaims"],
            "verbs": ["create", "get", "list", "watch"],
        },
        {
            "api_groups": [""],
            "resources": ["pods"],
            "verbs": ["delete", "get", "list", "patch", "update", "watch"],
        },
        {"api_groups": [""], "resources": ["services"], "verbs": _CRUD},
        {
            "api_groups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "patch", "update", "watch"],
        },
        {
            "api_groups": ["admissionregistration.k8s.io"],
            "resources": _WEBHOOK_CONFIGS,
            "verbs": ["get", "list", "update", "watch"],
        },
        {"api_groups": ["batch"], "resources": ["jobs"], "verbs": _CRUD},
        {
            "api_groups": ["batch"],
            "resources": ["jobs/status"],
            "verbs": ["get", "patch", "update"],
        },
        {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _CRUD},
        {
            "api_groups": ["jobset.x-k8s.io"],
            "resources": ["jobsets/finalizers"],
            "verbs": ["update"],
        },
        {
            "api_groups": ["jobset.x-k8s.io"],
            "resources": ["jobsets/status"],
            "verbs": ["get", "patch", "update"],
        },
        {"api_groups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _CRUD},
        {"api_groups": [""], "resources": ["secrets"], "verbs": ["get", "list", "update", "watch"]},
    ),
    # config/components/webhook/service.yaml:12, internalcert/secret.yaml:4
    webhook_service="jobset-webhook-service",
    webhook_secret="jobset-webhook-server-cert",
    # config/components/manager/kustomization.yaml (manager-config), controller_manager_config.yaml
    config_map="jobset-manager-config",
    config=(
        "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
        "leaderElection:\n  leaderElect: true\ninternalCertManagement:\n  enable: true\n"
        "  webhookServiceName: jobset-webhook-service\n"
        "  webhookSecretName: jobset-webhook-server-cert\n"
    ),
    webhook_port=9443,
    health_port=8081,
    # config/components/webhook/manifests.yaml:2-89 with patches/mutating-patch.yaml and
    # validating-patch.yaml (pods only when JobSet made them); pkg/util/cert/cert.go:31-32
    mutating=(
        "jobset-mutating-webhook-configuration",
        (
            Webhook(
                "mjobset.kb.io",
                "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
                *_JS,
                "jobsets",
                ("CREATE",),
            ),
            Webhook("mpod.kb.io", "/mutate--v1-pod", "", "v1", "pods", ("CREATE",), _JOBSET_PODS),
        ),
    ),
    validating=(
        "jobset-validating-webhook-configuration",
        (
            Webhook(
                "vjobset.kb.io",
                "/validate-jobset-x-k8s-io-v1alpha2-jobset",
                *_JS,
                "jobsets",
                ("CREATE", "UPDATE"),
            ),
            Webhook("vpod.kb.io", "/validate--v1-pod", "", "v1", "pods", ("CREATE",), _JOBSET_PODS),
        ),
    ),
    # config/components/manager/manager.yaml:28-30
    selector=(("control-plane", "controller-manager"),),
)

# The node image of Trainer v2.3.0's own runtimes of these names
# (manifests/base/runtimes/torch_distributed.yaml:38, xgboost_distributed.yaml:38): a TrainJob's
# spec.trainer.image replaces it, so it only matters for a TrainJob that names none.
RUNTIME_IMAGES = {
    "torch-distributed": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    "xgboost-distributed": "ghcr.io/kubeflow/trainer/xgboost-runtime",
}
