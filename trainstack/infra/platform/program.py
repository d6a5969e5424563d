"""The platform program: checked config in, resources and stack outputs out.

``build`` creates every resource and returns the stack outputs (the contract run stacks read
through a StackReference); ``main`` is what ``pulumi up`` runs via ``infra/__main__.py``.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack.errors import ConfigError
from trainstack.infra import names
from trainstack.infra.configread import raw_stack_config
from trainstack.infra.platform.ack import AckPlatform, build_ack
from trainstack.infra.platform.config import PlatformConfig, load
from trainstack.infra.platform.kubedl import install_kubedl
from trainstack.infra.platform.osssecret import build_oss_secrets
from trainstack.infra.platform.pullsecret import build_pull_secrets
from trainstack.infra.platform.storageclasses import (
    build_ack_storage_classes,
    build_local_storage_class,
)
from trainstack.infra.platform.tenancy import build_priority_classes, build_team_namespaces


def load_stack_config() -> PlatformConfig:
    """The running stack's config, checked (raises ``ConfigError``)."""
    values, secret_keys = raw_stack_config()
    stack = pulumi.get_stack()
    return load(values, stack=stack, source=f"Pulumi.{stack}.yaml", secret_keys=secret_keys)


def build(cfg: PlatformConfig) -> dict[str, Any]:
    cloud: AckPlatform | None = build_ack(cfg.ack) if cfg.ack else None
    kubeconfig: pulumi.Input[str] | None
    if cloud is not None:
        kubeconfig = cloud.kubeconfig
        context = None
        provider_opts = pulumi.ResourceOptions(depends_on=cloud.ready)  # nodes before workloads
    else:
        assert cfg.cluster is not None
        kubeconfig = cfg.cluster.kubeconfig  # None: the ambient ~/.kube/config or $KUBECONFIG
        context = cfg.cluster.context
        provider_opts = None
    provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=context, opts=provider_opts)
    opts = pulumi.ResourceOptions(provider=provider)

    kubedl = install_kubedl(cfg.kubedl, opts)
    namespaces = build_team_namespaces(cfg.teams, opts)
    priority_classes = build_priority_classes(opts)
    if cloud is not None and cfg.ack is not None:
        storage_classes = build_ack_storage_classes(cfg.ack.region, cloud, opts)
    else:
        assert cfg.cluster is not None
        storage_classes = build_local_storage_class(cfg.cluster, opts)
    pull_secret = build_pull_secrets(cfg.registry, namespaces, opts)
    # One OSS scheme per mode, exported so run stacks render volumes that match it: ack mounts
    # with the jobs RAM role through RRSA (no credential on nodes or in a Secret); kubeconfig mode
    # with the AccessKey Secret the platform creates, or not at all when none is configured.
    oss_auth: dict[str, Any]
    if cloud is not None:
        oss_auth = {"type": names.OSS_AUTH_RRSA, "roleName": cloud.jobs_role}
    elif cfg.oss_access_key:
        oss_auth = {"type": names.OSS_AUTH_SECRET,
                    "secretName": build_oss_secrets(namespaces, opts)}
    else:
        oss_auth = {"type": names.OSS_AUTH_NONE}

    outputs: dict[str, Any] = {
        "mode": cfg.mode,
        # Always a secret, even when empty or a path: run stacks treat it as a credential.
        names.OUT_KUBECONFIG: pulumi.Output.secret(kubeconfig or ""),
        names.OUT_KUBE_CONTEXT: context or "",
        names.OUT_NAMESPACES: {team: ns.metadata.name for team, ns in namespaces.items()},
        names.OUT_STORAGE_CLASSES: storage_classes,
        names.OUT_REGISTRY: cfg.registry.server,
        names.OUT_PULL_SECRET: pull_secret,
        names.OUT_KUBEDL_VERSION: cfg.kubedl.version,
        "kubedlWorkloads": list(cfg.kubedl.workloads),
        "kubedlController": kubedl.controller.metadata.name,
        names.OUT_PRIORITY_CLASSES: [pc.metadata.name for pc in priority_classes],
        names.OUT_OSS_AUTH: oss_auth,
    }
    if cloud is not None and cfg.ack is not None:
        outputs |= {"region": cfg.ack.region, "buckets": cloud.buckets,
                    "nasServer": cloud.nas_server, "registryNamespace": cloud.registry_namespace,
                    names.OUT_JOBS_ROLE: cloud.jobs_role}
    return outputs


def main() -> None:
    try:
        cfg = load_stack_config()
    except ConfigError as err:
        # RunError ends the program with the message alone, not a Python traceback.
        raise pulumi.RunError(err.render()) from None
    for key, value in build(cfg).items():
        pulumi.export(key, value)
