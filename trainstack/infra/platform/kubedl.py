"""Both modes: KubeDL at a pinned version — its CRDs, then its controller.

The Helm chart's CRDs are stale (they lack ``schedulingPolicy.queue``/``priorityClassName``), so the
CRDs are the release's ``config/crd/bases`` files, read from ``kubedl:crdSource`` and verified
against its lock (``kubedl_source.py``): nothing is fetched at preview or up. Each CRD is its own
resource, protected by ``protection.py`` (deleting a CRD deletes every job of its kind). The
controller image is ``kubedl:image`` (pinned by digest on ack, see ``config._kubedl_image``),
pulled with the platform's registry credentials when it is on that registry (on ack: a private
ACR repository of ``registryRepos``); a pod can only use a pull secret of its own namespace.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform import podsecurity
from trainstack.infra.platform.config import KUBEDL_IMAGE_HOW, KubeDLConfig, RegistryConfig
from trainstack.infra.platform.config_ack import SYSTEM_TAINT
from trainstack.infra.platform.kubedl_source import KUBEDL_RELEASE, CrdFile, CrdRelease
from trainstack.infra.platform.pullsecret import pull_secret, pull_secret_payload
from trainstack.kueue.podgroup import KUBEDL_DAG_GATE_OFF
from trainstack.platformnames import KUBEDL_SCHEMA_ANNOTATION, KUBEDL_SOURCE_ANNOTATION

COMPONENT = "trainstack:platform:KubeDL"

SERVICE_ACCOUNT = "kubedl"
# Read by KubeDL's workload gate; it overrides the --workloads flag and, unlike that Go flag,
# cannot be rejected by the pflag parser, so the enabled set is passed this way.
WORKLOADS_ENV = "WORKLOADS_ENABLE"

_CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]
# A superset of KubeDL v0.5.0 config/rbac/role.yaml (every controller's kubebuilder:rbac markers)
# and leader_election_role.yaml, plus what the JobCoordinator reads (priorityclasses).
_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {
        "api_groups": [""],
        "resources": [
            "pods",
            "pods/log",
            "services",
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "persistentvolumes",
        ],
        "verbs": _CRUD,
    },
    {
        "api_groups": [""],
        "resources": ["pods/status", "services/status", "configmaps/status"],
        "verbs": ["get", "patch", "update"],
    },
    {
        "api_groups": [""],
        "resources": ["nodes", "namespaces", "resourcequotas"],
        "verbs": ["get", "list", "watch"],
    },
    # The JobCoordinator (feature gate on by default, KubeDL v0.5.0 pkg/features/features.go)
    # reads the PriorityClass of every job that names one (pkg/jobcoordinator/helper/helper.go,
    # PopulatePriorityValue) through the cached client, which lists and watches.
    {
        "api_groups": ["scheduling.k8s.io"],
        "resources": ["priorityclasses"],
        "verbs": ["get", "list", "watch"],
    },
    {"api_groups": ["apps"], "resources": ["deployments"], "verbs": _CRUD},
    {"api_groups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": _CRUD},
    {"api_groups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _CRUD},
    {
        "api_groups": [
            "training.kubedl.io",
            "inference.kubedl.io",
            "apps.kubedl.io",
            "model.kubedl.io",
            "cache.kubedl.io",
            "serving.kubedl.io",
            "notebook.kubedl.io",
        ],
        "resources": ["*"],
        "verbs": _CRUD,
    },
    # Gang schedulers' PodGroups and queues, as KubeDL v0.5.0 config/rbac/role.yaml grants them
    # (coscheduling, volcano, kube-batch; every verb).
    {
        "api_groups": [
            "scheduling.incubator.k8s.io",
            "scheduling.sigs.dev",
            "scheduling.volcano.sh",
        ],
        "resources": ["podgroups", "queues"],
        "verbs": ["*"],
    },
    {
        "api_groups": ["scheduling.sigs.k8s.io", "scheduling.x-k8s.io"],
        "resources": ["podgroups"],
        "verbs": ["*"],
    },
    # Elastic PyTorch jobs restart a worker's container in place through OpenKruise's
    # ContainerRecreateRequest (KubeDL v0.5.0 controllers/pytorch/elastic_scale.go creates, reads
    # and deletes them). v0.5.0's config/manager/all_in_one.yaml means to grant this, but its
    # `resources:` list is mis-indented (lines 445-447) and parses as the one bogus resource
    # "containerrecreaterequests - containerrecreaterequests/status", so the release grants
    # nothing usable. No resourcequotas write appears anywhere in v0.5.0's config/ (role.yaml,
    # all_in_one.yaml): the controller only reads them (above).
    {
        "api_groups": ["apps.kruise.io"],
        "resources": ["containerrecreaterequests", "containerrecreaterequests/status"],
        "verbs": _CRUD,
    },
]


def controller_args(cfg: KubeDLConfig) -> list[str]:
    args = ["--enable-leader-election=true"]
    if cfg.gang_scheduler:
        args.append(f"--gang-scheduler-name={cfg.gang_scheduler}")
    if not cfg.dag_scheduling:
        args.append(KUBEDL_DAG_GATE_OFF)
    return args


def crd_resource_name(crd: CrdFile) -> str:
    return f"crd-{crd.kind.lower()}"


def crd_resource(
    crd: CrdFile,
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
    resource_name: str | None = None,
    release: CrdRelease = KUBEDL_RELEASE,
) -> k8s.apiextensions.v1.CustomResourceDefinition:
    """One locked CRD as its own resource (trainer.py installs Trainer's and JobSet's so too)."""
    annotations = {KUBEDL_SOURCE_ANNOTATION: crd.sha256}
    if crd.document is not None:
        doc = crd.document
        annotations |= {
            str(k): str(v)
            for k, v in ((doc.get("metadata") or {}).get("annotations") or {}).items()
        }
        spec = doc["spec"]
    else:
        # Offline plan of an unmirrored folder: the lock names the CRD; its schema is unknown
        # until `trainstack kubedl mirror` fills the folder (and `pulumi up` refuses until then).
        # Trainer's ClusterTrainingRuntime is the one cluster-scoped kind a lock names.
        plural, group = crd.name.split(".", 1)
        spec = {
            "group": group,
            "names": {"kind": crd.kind, "plural": plural},
            "scope": "Cluster"
            if crd.kind.startswith("Cluster") or crd.kind in release.cluster_kinds
            else "Namespaced",
            "versions": [],
        }
        verb = "trainstack kubedl mirror"
        if release is not KUBEDL_RELEASE:
            verb += f" --release {release.name}"
        annotations[KUBEDL_SCHEMA_ANNOTATION] = f"(not mirrored yet: {verb})"
    return k8s.apiextensions.v1.CustomResourceDefinition(
        resource_name or crd_resource_name(crd),
        metadata={"name": crd.name, "labels": labels, "annotations": annotations},
        spec=spec,
        opts=opts,
    )


class KubeDL(pulumi.ComponentResource):
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition]
    controller: k8s.apps.v1.Deployment | None

    def __init__(
        self,
        name: str,
        cfg: KubeDLConfig,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        registry: RegistryConfig,
        registry_password: pulumi.Input[str],
        image_pull: Sequence[pulumi.Resource] = (),
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.crds, self.controller = _install(cfg, registry, registry_password, child, image_pull)
        self.register_outputs({})


def _install(
    cfg: KubeDLConfig,
    registry: RegistryConfig,
    registry_password: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    image_pull: Sequence[pulumi.Resource],
) -> tuple[list[k8s.apiextensions.v1.CustomResourceDefinition], k8s.apps.v1.Deployment | None]:
    labels = {
        "app.kubernetes.io/name": "kubedl",
        "app.kubernetes.io/version": cfg.version,
        "app.kubernetes.io/managed-by": "trainstack",
    }
    namespace = k8s.core.v1.Namespace(
        "kubedl-namespace",
        metadata={
            "name": cfg.namespace,
            "labels": {**labels, **podsecurity.labels(podsecurity.Level.BASELINE)},
        },
        opts=opts,
    )
    crds = [crd_resource(crd, labels, opts) for crd in cfg.crds]
    binding = _rights(namespace, labels, opts)
    if cfg.image is None:
        pulumi.log.warn(
            "kubedl:image is not set: KubeDL's controller is not deployed. " + KUBEDL_IMAGE_HOW
        )
        return crds, None
    pod = _pod(cfg, cfg.image, registry, registry_password, namespace, opts)
    selector = {"app.kubernetes.io/name": "kubedl"}
    controller = k8s.apps.v1.Deployment(
        "kubedl-controller",
        metadata={"name": "kubedl", "namespace": namespace.metadata.name, "labels": labels},
        spec={
            "replicas": cfg.replicas,
            "selector": {"match_labels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": pod,
            },
        },
        # The controller looks its CRDs up at start; create them (and its rights) first, and
        # whatever its pod needs to pull its image (the credential helper).
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[*crds, binding, *image_pull])
        ),
    )
    return crds, controller


def _rights(
    namespace: k8s.core.v1.Namespace, labels: dict[str, str], opts: pulumi.ResourceOptions
) -> k8s.rbac.v1.ClusterRoleBinding:
    """The controller's ServiceAccount and its cluster-wide rights (`_RULES`)."""
    account = k8s.core.v1.ServiceAccount(
        "kubedl-service-account",
        metadata={"name": SERVICE_ACCOUNT, "namespace": namespace.metadata.name, "labels": labels},
        opts=opts,
    )
    role = k8s.rbac.v1.ClusterRole(
        "kubedl-role",
        metadata={"name": "kubedl-manager", "labels": labels},
        rules=_RULES,
        opts=opts,
    )
    return k8s.rbac.v1.ClusterRoleBinding(
        "kubedl-role-binding",
        metadata={"name": "kubedl-manager", "labels": labels},
        role_ref={
            "api_group": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role.metadata.name,
        },
        subjects=[
            {
                "kind": "ServiceAccount",
                "name": account.metadata.name,
                "namespace": namespace.metadata.name,
            }
        ],
        opts=opts,
    )


def _pod(
    cfg: KubeDLConfig,
    image: str,
    registry: RegistryConfig,
    registry_password: pulumi.Input[str],
    namespace: k8s.core.v1.Namespace,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.PodSpecArgsDict:
    """The controller's pod, with a pull secret of its own when its image is in an external
    registry trainstack was given a password for; the platform's ACR is pulled through the
    credential helper, which watches this namespace (registry.py)."""
    pod: k8s.core.v1.PodSpecArgsDict = {
        "service_account_name": SERVICE_ACCOUNT,
        # Platform software: it may run on the system pool (config_ack.SYSTEM_TAINT).
        "tolerations": [{"key": SYSTEM_TAINT[0], "operator": "Exists"}],
        "containers": [
            {
                "name": "kubedl-manager",
                "image": image,
                "image_pull_policy": "IfNotPresent",
                "args": controller_args(cfg),
                "env": [{"name": WORKLOADS_ENV, "value": ",".join(cfg.workloads)}],
                "ports": [{"name": "metrics", "container_port": 8080}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "512Mi"},
                    "limits": {"cpu": "2", "memory": "2Gi"},
                },
            }
        ],
    }
    if image.split("/", 1)[0] == registry.server and not registry.pulls_without_secret:
        # The ACR repositories are PRIVATE (registry.py; pulumi_alicloud
        # cs/registry_enterprise_repo.py, repo_type), and the team namespaces' copies of the pull
        # secret are out of this pod's reach.
        secret = pull_secret(
            "kubedl-pull-secret",
            namespace.metadata.name,
            pull_secret_payload(registry, registry_password),
            opts,
        )
        pod["image_pull_secrets"] = [{"name": secret.metadata.name}]
    return pod
