"""What Kueue v0.19.2's release manifests install, as facts the platform builds its own objects
from (kueue.py): the CRD files, the controller's image, names, ports and ClusterRole, its
Configuration, the webhooks of the integrations trainstack enables and the visibility API.

Paths are in github.com/kubernetes-sigs/kueue at tag v0.19.2 (`Kueue v0.19.2 <path>:<line>`). The
release manifest is config/default's kustomization, which prefixes every name with `kueue-` and
puts it in `kueue-system` (config/default/kustomization.yaml:2, 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_kubernetes as k8s

from trainstack.infra.platform import inputs
from trainstack.infra.platform.kubedl_source import CrdRelease
from trainstack.infra.platform.trainer_release import Controller, Webhook
from trainstack.kueue import api

KUEUE_CONFIG_NS = inputs.KUEUE_NS
KUEUE_VERSION = api.VERSION
# Released images live under registry.k8s.io/kueue (hack/releasing/wait_for_images.sh:44,
# hack/helm-chart-package.sh:32); an environment on ack pins a digest in its own registry.
KUEUE_UPSTREAM_IMAGE = f"registry.k8s.io/kueue/kueue:{KUEUE_VERSION}"

# Kueue v0.19.2 config/components/crd/kustomization.yaml: every CRD of the release. The
# controller watches them all (an absent one stops its caches from syncing), so all are installed.
KUEUE_RELEASE = CrdRelease(
    name="kueue",
    title="Kueue",
    config_ns=KUEUE_CONFIG_NS,
    lock_name="kueue.lock.json",
    release_path="config/components/crd/bases",
    crds={
        "AdmissionCheck": "kueue.x-k8s.io_admissionchecks.yaml",
        "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
        "Cohort": "kueue.x-k8s.io_cohorts.yaml",
        "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
        "MultiKueueCluster": "kueue.x-k8s.io_multikueueclusters.yaml",
        "MultiKueueConfig": "kueue.x-k8s.io_multikueueconfigs.yaml",
        "ProvisioningRequestConfig": "kueue.x-k8s.io_provisioningrequestconfigs.yaml",
        "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
        "Topology": "kueue.x-k8s.io_topologies.yaml",
        "WorkloadPriorityClass": "kueue.x-k8s.io_workloadpriorityclasses.yaml",
        "Workload": "kueue.x-k8s.io_workloads.yaml",
    },
    repository="kubernetes-sigs/kueue",
    # every kind but LocalQueue and Workload (their CRDs' spec.scope)
    cluster_kinds=(
        "AdmissionCheck",
        "Cohort",
        "MultiKueueCluster",
        "MultiKueueConfig",
        "ProvisioningRequestConfig",
        "ResourceFlavor",
        "Topology",
        "WorkloadPriorityClass",
    ),
)

_WATCH = ["get", "list", "watch"]
_EDIT = ["delete", "get", "list", "patch", "update", "watch"]
_STATUS = ["get", "patch", "update"]

# The integrations the Configuration enables (its release default, config/components/manager/
# controller_manager_config.yaml:45-64, lists ray, appwrapper, deployments and more): batch Jobs
# (custom runs), plain pods (KubeDL's jobs, as groups: trainstack.kueue.podgroup), and on a
# Trainer environment JobSet and TrainJob.
KUBEDL_FRAMEWORKS = (api.FRAMEWORK_BATCH_JOB, api.FRAMEWORK_POD)
TRAINER_FRAMEWORKS = (api.FRAMEWORK_JOBSET, api.FRAMEWORK_TRAINJOB)


def configuration(frameworks: tuple[str, ...]) -> str:
    """The controller's Configuration (config/components/manager/controller_manager_config.yaml:
    1-24, apis/config/v1beta2/configuration_types.go): the release's health, metrics, webhook and
    leader election; the internal certificate manager's names; the integrations trainstack uses;
    fair sharing on (its presence enables it: cmd/kueue/main.go:346-348) with the release's
    example strategies (controller_manager_config.yaml:67-68); the gate that makes a pending
    Workload's QuotaReserved reason say why (trainstack.kueue.api.UNADMITTED_GATE); and
    ephemeral storage left to the ResourceQuota."""
    lines = [
        "apiVersion: config.kueue.x-k8s.io/v1beta2",
        "kind: Configuration",
        "health:",
        "  healthProbeBindAddress: :8081",
        "metrics:",
        "  bindAddress: :8443",
        "webhook:",
        "  port: 9443",
        "leaderElection:",
        "  leaderElect: true",
        "  resourceName: c1f6bfd2.kueue.x-k8s.io",
        "internalCertManagement:",
        "  enable: true",
        f"  webhookServiceName: {KUEUE.webhook_service}",
        f"  webhookSecretName: {KUEUE.webhook_secret}",
        "manageJobsWithoutQueueName: false",
        "integrations:",
        "  frameworks:",
        *(f'  - "{f}"' for f in frameworks),
        "fairSharing:",
        "  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]",
        "featureGates:",
        f"  {api.UNADMITTED_GATE}: true",
        # Every container gets an ephemeral-storage request from its team's LimitRange, which
        # the ResourceQuota counts; Kueue checks every resource of a Workload against the
        # ClusterQueue unless told otherwise (BlockUndeclared, the default:
        # apis/config/v1beta2/configuration_types.go:574-595;
        # pkg/scheduler/flavorassigner/flavorassigner.go:294-296), so it is left out.
        "resources:",
        "  excludeResourcePrefixes: [ephemeral-storage]",
    ]
    return "\n".join(lines) + "\n"


# Only objects that carry a queue go through Kueue's job and pod webhooks: trainstack renders the
# label on every job it queues, and nothing else on the cluster is Kueue's (the release instead
# leaves kube-system and kueue-system out by namespace: config/components/webhook/
# kustomization.yaml:13-51). So the controller's own pods never wait for its webhook.
_QUEUED = (api.QUEUE_LABEL, "Exists", ())
_V1B2 = (api.GROUP, "v1beta2")

KUEUE = Controller(
    title="Kueue",
    # config/default/kustomization.yaml:2, 9
    namespace="kueue-system",
    # config/components/manager/manager.yaml:9, 29, 57 (with the kueue- prefix)
    deployment="kueue-controller-manager",
    container="manager",
    service_account="kueue-controller-manager",
    cluster_role="kueue-manager-role",
    # config/components/rbac/role.yaml:1-459, the rules of the integrations trainstack enables
    # (ray, kubeflow.org, appwrapper, leaderworkerset, spark and provisioning requests left out),
    # with the namespaced leader_election_role.yaml and manager_secrets_role.yaml rights granted
    # cluster-wide.
    rules=(
        {"api_groups": [""], "resources": ["limitranges", "namespaces", "nodes"], "verbs": _WATCH},
        {"api_groups": [""], "resources": ["pods"], "verbs": _EDIT},
        {"api_groups": [""], "resources": ["pods/finalizers"], "verbs": ["get", "update"]},
        {"api_groups": [""], "resources": ["pods/status"], "verbs": ["get", "patch"]},
        {
            "api_groups": [""],
            "resources": ["podtemplates"],
            "verbs": ["create", "delete", "get", "list", "update", "watch"],
        },
        {
            "api_groups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "verbs": ["get", "list", "update", "watch"],
        },
        {
            "api_groups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get", "list", "update", "watch"],
        },
        {
            "api_groups": ["apps"],
            "resources": ["deployments", "replicasets", "statefulsets"],
            "verbs": _WATCH,
        },
        {"api_groups": ["batch"], "resources": ["jobs"], "verbs": _EDIT},
        {
            "api_groups": ["batch"],
            "resources": ["jobs/finalizers", "jobs/status"],
            "verbs": _STATUS,
        },
        {
            "api_groups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "patch", "update", "watch"],
        },
        {
            "api_groups": ["flowcontrol.apiserver.k8s.io"],
            "resources": ["flowschemas", "prioritylevelconfigurations"],
            "verbs": ["list", "watch"],
        },
        {
            "api_groups": ["flowcontrol.apiserver.k8s.io"],
            "resources": ["flowschemas/status"],
            "verbs": ["patch"],
        },
        {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _EDIT},
        {
            "api_groups": ["jobset.x-k8s.io"],
            "resources": ["jobsets/finalizers"],
            "verbs": ["get", "update"],
        },
        {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": _STATUS},
        {
            "api_groups": [api.GROUP],
            "resources": ["admissionchecks", "clusterqueues", "resourceflavors", "topologies"],
            "verbs": ["get", "list", "update", "watch"],
        },
        {
            "api_groups": [api.GROUP],
            "resources": [
                "admissionchecks/finalizers",
                "clusterqueues/finalizers",
                "resourceflavors/finalizers",
                "topologies/finalizers",
                "workloads/finalizers",
            ],
            "verbs": ["update"],
        },
        {
            "api_groups": [api.GROUP],
            "resources": [
                "admissionchecks/status",
                "clusterqueues/status",
                "cohorts/status",
                "localqueues/status",
                "multikueueclusters/status",
                "workloads/status",
            ],
            "verbs": _STATUS,
        },
        {
            "api_groups": [api.GROUP],
            "resources": [
                "cohorts",
                "localqueues",
                "multikueueclusters",
                "multikueueconfigs",
                "provisioningrequestconfigs",
                "workloadpriorityclasses",
            ],
            "verbs": _WATCH,
        },
        {
            "api_groups": [api.GROUP],
            "resources": ["workloads"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {"api_groups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": _WATCH},
        {
            "api_groups": ["resource.k8s.io"],
            "resources": [
                "deviceclasses",
                "resourceclaims",
                "resourceclaimtemplates",
                "resourceslices",
            ],
            "verbs": _WATCH,
        },
        {"api_groups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": _WATCH},
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": ["clustertrainingruntimes", "trainingruntimes"],
            "verbs": _WATCH,
        },
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": ["trainjobs"],
            "verbs": ["get", "list", "patch", "update", "watch"],
        },
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": ["trainjobs/finalizers"],
            "verbs": ["get", "update"],
        },
        {
            "api_groups": ["trainer.kubeflow.org"],
            "resources": ["trainjobs/status"],
            "verbs": _STATUS,
        },
        # metrics_auth_role.yaml:5-17: the metrics and visibility servers check their callers
        {
            "api_groups": ["authentication.k8s.io"],
            "resources": ["tokenreviews"],
            "verbs": ["create"],
        },
        {
            "api_groups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
        # leader_election_role.yaml, manager_secrets_role.yaml
        {
            "api_groups": [""],
            "resources": ["configmaps"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {
            "api_groups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {"api_groups": [""], "resources": ["secrets"], "verbs": ["get", "list", "update", "watch"]},
    ),
    # config/components/webhook/service.yaml:4, internalcert/secret.yaml:4 (kueue- prefixed)
    webhook_service="kueue-webhook-service",
    webhook_secret="kueue-webhook-server-cert",
    # config/components/manager/kustomization.yaml:7-10, config/default/manager_config_patch.yaml
    config_map="kueue-manager-config",
    config="",  # per environment: configuration()
    webhook_port=9443,
    health_port=8081,
    # config/components/webhook/manifests.yaml: the webhooks of Kueue's own objects and of the
    # integrations enabled (lines 34, 92, 111, 188, 283, 360, 379 and 443, 463, 523, 543, 623,
    # 723, 803, 823).
    mutating=(
        "kueue-mutating-webhook-configuration",
        (
            Webhook(
                "mclusterqueue.kb.io",
                "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue",
                *_V1B2,
                "clusterqueues",
                ("CREATE",),
            ),
            Webhook(
                "mresourceflavor.kb.io",
                "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor",
                *_V1B2,
                "resourceflavors",
                ("CREATE",),
            ),
            Webhook(
                "mworkload.kb.io",
                "/mutate-kueue-x-k8s-io-v1beta2-workload",
                *_V1B2,
                "workloads",
                ("CREATE",),
            ),
            Webhook(
                "mjob.kb.io", "/mutate-batch-v1-job", "batch", "v1", "jobs", ("CREATE",), _QUEUED
            ),
            Webhook("mpod.kb.io", "/mutate--v1-pod", "", "v1", "pods", ("CREATE",), _QUEUED),
        ),
    ),
    validating=(
        "kueue-validating-webhook-configuration",
        (
            Webhook(
                "vclusterqueue.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
                *_V1B2,
                "clusterqueues",
                ("CREATE", "UPDATE"),
            ),
            Webhook(
                "vcohort.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-cohort",
                *_V1B2,
                "cohorts",
                ("CREATE", "UPDATE"),
            ),
            Webhook(
                "vresourceflavor.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-resourceflavor",
                *_V1B2,
                "resourceflavors",
                ("CREATE", "UPDATE"),
            ),
            Webhook(
                "vworkload.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-workload",
                *_V1B2,
                "workloads",
                ("CREATE", "UPDATE"),
            ),
            Webhook(
                "vjob.kb.io",
                "/validate-batch-v1-job",
                "batch",
                "v1",
                "jobs",
                ("CREATE", "UPDATE"),
                _QUEUED,
            ),
            Webhook(
                "vpod.kb.io", "/validate--v1-pod", "", "v1", "pods", ("CREATE", "UPDATE"), _QUEUED
            ),
        ),
    ),
    # config/default/kustomization.yaml:16-18 (control-plane: controller-manager on selectors)
    selector=(("control-plane", "controller-manager"), ("app.kubernetes.io/name", "kueue")),
)

# On a Trainer environment, the JobSet and TrainJob webhooks too (manifests.yaml:111, 360, 543,
# 803).
TRAINER_WEBHOOKS = (
    (
        Webhook(
            "mjobset.kb.io",
            "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
            "jobset.x-k8s.io",
            "v1alpha2",
            "jobsets",
            ("CREATE",),
            _QUEUED,
        ),
        Webhook(
            "mtrainjob.kb.io",
            "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
            "trainer.kubeflow.org",
            "v1alpha1",
            "trainjobs",
            ("CREATE",),
            _QUEUED,
        ),
    ),
    (
        Webhook(
            "vjobset.kb.io",
            "/validate-jobset-x-k8s-io-v1alpha2-jobset",
            "jobset.x-k8s.io",
            "v1alpha2",
            "jobsets",
            ("CREATE", "UPDATE"),
            _QUEUED,
        ),
        Webhook(
            "vtrainjob.kb.io",
            "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
            "trainer.kubeflow.org",
            "v1alpha1",
            "trainjobs",
            ("CREATE", "UPDATE"),
            _QUEUED,
        ),
    ),
)


@dataclass(frozen=True)
class Visibility:
    """The pending-workloads API the controller serves (config/components/visibility/
    apiservice_v1beta2.yaml, service.yaml, role_binding.yaml; kueue- prefixed)."""

    api_service: str = f"{api.VISIBILITY_VERSION}.{api.VISIBILITY_GROUP}"
    service: str = "kueue-visibility-server"
    port: int = 8082
    auth_reader_binding: str = "kueue-visibility-server-auth-reader"


VISIBILITY = Visibility()

# What a team's runner may read of the queues (config/components/rbac/
# pending_workloads_lq_viewer_role.yaml; localqueue_viewer_role.yaml; workload_viewer_role.yaml):
# its LocalQueue, its Workloads, and the pending ones' positions.
TEAM_QUEUE_RULES: tuple[k8s.rbac.v1.PolicyRuleArgsDict, ...] = (
    {"api_groups": [api.GROUP], "resources": ["localqueues", "workloads"], "verbs": _WATCH},
    {
        "api_groups": [api.VISIBILITY_GROUP],
        "resources": ["localqueues/pendingworkloads"],
        "verbs": ["get", "list"],
    },
)
