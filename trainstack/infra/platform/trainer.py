"""A Trainer environment (`trainstack:operator: trainer`): JobSet and Kubeflow Trainer at pinned
versions, then trainstack's ClusterTrainingRuntimes — the way kubedl.py installs KubeDL.

Each controller gets its namespace, its CRDs (from the locked folder, protection.py protects them),
a ServiceAccount bound to its release's ClusterRole, the Configuration file, the webhook Service,
the Secret its in-process certificate manager writes the serving certificate into, and the
webhook configurations it injects its CA into (without them neither controller starts its
reconcilers: both wait for their certificates). What comes from the releases is in
trainer_release.py; the runtimes in trainer_runtimes.py. Trainer needs JobSet's CRD (it watches
JobSets), so it depends on JobSet; the runtimes depend on Trainer's validating webhook.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform import podsecurity
from trainstack.infra.platform.config_ack import SYSTEM_TAINT
from trainstack.infra.platform.config_trainer import ControllerConfig, TrainerConfig, image_how
from trainstack.infra.platform.kubedl import crd_resource, crd_resource_name
from trainstack.infra.platform.kubedl_source import CrdRelease
from trainstack.infra.platform.trainer_release import (
    JOBSET,
    JOBSET_RELEASE,
    TRAINER,
    TRAINER_RELEASE,
    Controller,
    Webhook,
)
from trainstack.infra.platform.trainer_runtimes import FRAMEWORK_LABEL, installed, runtime_spec
from trainstack.trainer.runtimes import RUNTIME_KIND, TRAINJOB_API_VERSION

COMPONENT = "trainstack:platform:Trainer"
CONFIG_FILE = "controller_manager_config.yaml"


class Trainer(pulumi.ComponentResource):
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition]
    controllers: list[k8s.apps.v1.Deployment]
    runtimes: list[k8s.apiextensions.CustomResource]

    def __init__(
        self,
        name: str,
        cfg: TrainerConfig,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        image_pull: Sequence[pulumi.Resource] = (),
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        jobset = _install(JOBSET, JOBSET_RELEASE, cfg.jobset, child, image_pull, ())
        trainer = _install(TRAINER, TRAINER_RELEASE, cfg.trainer, child, image_pull, jobset[0])
        self.crds = [*jobset[0], *trainer[0]]
        self.controllers = [d for d in (jobset[1], trainer[1]) if d is not None]
        after = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[*trainer[0], *trainer[2]])
        )
        self.runtimes = [
            k8s.apiextensions.CustomResource(
                f"runtime-{r.name}",
                api_version=TRAINJOB_API_VERSION,
                kind=RUNTIME_KIND,
                metadata={
                    "name": r.name,
                    "labels": {
                        FRAMEWORK_LABEL: str(r.runtime.ml_policy),
                        "app.kubernetes.io/managed-by": "trainstack",
                    },
                },
                spec=runtime_spec(r.runtime, r.priority),
                opts=after,
            )
            for r in installed()
        ]
        self.register_outputs({})


def _install(
    ctl: Controller,
    release: CrdRelease,
    cfg: ControllerConfig,
    opts: pulumi.ResourceOptions,
    image_pull: Sequence[pulumi.Resource],
    needs: Sequence[pulumi.Resource],
) -> tuple[
    list[k8s.apiextensions.v1.CustomResourceDefinition],
    k8s.apps.v1.Deployment | None,
    list[pulumi.Resource],
    k8s.core.v1.Namespace,
]:
    """One controller: its CRDs, its deployment (None until its image is set on ack), its
    webhook configurations and its namespace."""
    prefix = release.name
    labels = {
        "app.kubernetes.io/name": prefix,
        "app.kubernetes.io/version": cfg.version,
        "app.kubernetes.io/managed-by": "trainstack",
    }
    namespace = k8s.core.v1.Namespace(
        f"{prefix}-namespace",
        metadata={
            "name": cfg.namespace,
            "labels": {**labels, **podsecurity.labels(podsecurity.Level.BASELINE)},
        },
        opts=opts,
    )
    ns = namespace.metadata.name
    crd_opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(needs)))
    crds = [
        crd_resource(c, labels, crd_opts, f"{prefix}-{crd_resource_name(c)}", release)
        for c in cfg.crds
    ]
    binding = _rights(ctl, prefix, ns, labels, opts)
    hooks = _webhooks(ctl, prefix, cfg.namespace, labels, opts)
    if cfg.image is None:
        pulumi.log.warn(
            f"{release.config_ns}:image is not set: {release.title}'s controller is not "
            f"deployed. {image_how(release)}"
        )
        return crds, None, hooks, namespace
    config = k8s.core.v1.ConfigMap(
        f"{prefix}-config",
        metadata={"name": ctl.config_map, "namespace": ns, "labels": labels},
        data={CONFIG_FILE: ctl.config},
        opts=opts,
    )
    # Empty: the controller's certificate manager writes the serving certificate into it.
    k8s.core.v1.Secret(
        f"{prefix}-webhook-cert",
        metadata={"name": ctl.webhook_secret, "namespace": ns, "labels": labels},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["data"])),
    )
    selector = dict(ctl.selector)
    k8s.core.v1.Service(
        f"{prefix}-webhook-service",
        metadata={"name": ctl.webhook_service, "namespace": ns, "labels": labels},
        spec={
            "selector": selector,
            "ports": [{"name": "webhook", "port": 443, "target_port": ctl.webhook_port}],
        },
        opts=opts,
    )
    deployment = k8s.apps.v1.Deployment(
        f"{prefix}-controller",
        metadata={"name": ctl.deployment, "namespace": ns, "labels": labels},
        spec={
            "replicas": 1,
            "selector": {"match_labels": selector},
            "template": {
                "metadata": {"labels": {**labels, **selector}},
                "spec": _pod(ctl, cfg.image),
            },
        },
        opts=pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(depends_on=[*crds, binding, config, *hooks, *image_pull]),
        ),
    )
    return crds, deployment, hooks, namespace


def _pod(ctl: Controller, image: str) -> k8s.core.v1.PodSpecArgsDict:
    probe: Any = {"http_get": {"path": "/healthz", "port": ctl.health_port}}
    return {
        "service_account_name": ctl.service_account,
        # Platform software: it may run on the system pool (config_ack.SYSTEM_TAINT).
        "tolerations": [{"key": SYSTEM_TAINT[0], "operator": "Exists"}],
        "security_context": {
            "run_as_non_root": True,
            "seccomp_profile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": ctl.container,
                "image": image,
                "image_pull_policy": "IfNotPresent",
                "args": [f"--config=/{CONFIG_FILE}"],
                "ports": [{"name": "webhook", "container_port": ctl.webhook_port}],
                "liveness_probe": probe,
                "readiness_probe": {"http_get": {"path": "/readyz", "port": ctl.health_port}},
                "security_context": {
                    "allow_privilege_escalation": False,
                    "read_only_root_filesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "volume_mounts": [
                    {
                        "name": "cert",
                        "mount_path": "/tmp/k8s-webhook-server/serving-certs",
                        "read_only": True,
                    },
                    {
                        "name": "config",
                        "mount_path": f"/{CONFIG_FILE}",
                        "sub_path": CONFIG_FILE,
                        "read_only": True,
                    },
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "128Mi"},
                    "limits": {"memory": "4Gi"},
                },
            }
        ],
        "volumes": [
            {"name": "cert", "secret": {"secret_name": ctl.webhook_secret, "default_mode": 420}},
            {"name": "config", "config_map": {"name": ctl.config_map}},
        ],
    }


def _rights(
    ctl: Controller,
    prefix: str,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.rbac.v1.ClusterRoleBinding:
    account = k8s.core.v1.ServiceAccount(
        f"{prefix}-service-account",
        metadata={"name": ctl.service_account, "namespace": namespace, "labels": labels},
        opts=opts,
    )
    role = k8s.rbac.v1.ClusterRole(
        f"{prefix}-role",
        metadata={"name": ctl.cluster_role, "labels": labels},
        rules=list(ctl.rules),
        opts=opts,
    )
    return k8s.rbac.v1.ClusterRoleBinding(
        f"{prefix}-role-binding",
        metadata={"name": ctl.cluster_role, "labels": labels},
        role_ref={
            "api_group": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role.metadata.name,
        },
        subjects=[
            {"kind": "ServiceAccount", "name": account.metadata.name, "namespace": namespace}
        ],
        opts=opts,
    )


def _hook(h: Webhook, service: str, namespace: str) -> Any:
    hook: dict[str, object] = {
        "name": h.name,
        "admission_review_versions": ["v1"],
        "side_effects": "None",
        "failure_policy": "Fail",
        "client_config": {"service": {"name": service, "namespace": namespace, "path": h.path}},
        "rules": [
            {
                "api_groups": [h.group],
                "api_versions": [h.version],
                "operations": list(h.operations),
                "resources": [h.resource],
            }
        ],
    }
    if h.selector is not None:
        key, operator, values = h.selector
        expression: dict[str, object] = {"key": key, "operator": operator}
        if values:
            expression["values"] = list(values)
        hook["object_selector"] = {"match_expressions": [expression]}
    return hook


def _webhooks(
    ctl: Controller,
    prefix: str,
    namespace: str,
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The webhook configurations, caBundle left to the controller (ignored here, so an update
    does not wipe what it injected)."""
    adm = k8s.admissionregistration.v1
    keep = pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(ignore_changes=["webhooks[*].clientConfig.caBundle"])
    )
    service = ctl.webhook_service
    mutating_name, mutating = ctl.mutating
    validating_name, validating = ctl.validating
    return [
        adm.MutatingWebhookConfiguration(
            f"{prefix}-mutating-webhooks",
            metadata=_meta(mutating_name, labels),
            webhooks=[_hook(h, service, namespace) for h in mutating],
            opts=keep,
        ),
        adm.ValidatingWebhookConfiguration(
            f"{prefix}-validating-webhooks",
            metadata=_meta(validating_name, labels),
            webhooks=[_hook(h, service, namespace) for h in validating],
            opts=keep,
        ),
    ]


def _meta(name: str, labels: dict[str, str]) -> k8s.meta.v1.ObjectMetaArgsDict:
    return {"name": name, "labels": labels}
