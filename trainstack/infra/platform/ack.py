"""ack mode: everything on Alibaba Cloud, in dependency order, behind one explicit provider."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.cluster import build_cluster
from trainstack.infra.platform.config_ack import AckConfig
from trainstack.infra.platform.iam import build_jobs_role
from trainstack.infra.platform.network import build_network
from trainstack.infra.platform.nodepools import build_node_pools
from trainstack.infra.platform.registry import build_registry
from trainstack.infra.platform.storage import build_storage


@dataclass(frozen=True)
class AckPlatform:
    kubeconfig: pulumi.Output[str]  # secret
    nas_server: pulumi.Output[str]
    buckets: dict[str, pulumi.Output[str]]  # purpose -> bucket name
    registry_namespace: pulumi.Output[str]
    jobs_role: pulumi.Output[str]
    ready: list[pulumi.Resource]  # what Kubernetes resources must wait for (nodes to exist)


def build_ack(ack: AckConfig) -> AckPlatform:
    # An explicit provider pins the region from checked config, whatever the ambient
    # ALICLOUD_REGION or alicloud:region say.
    provider = alicloud.Provider("alicloud", region=ack.region)
    opts = pulumi.ResourceOptions(provider=provider)
    net = build_network(ack, opts)
    cluster = build_cluster(ack, net, opts)
    pools = build_node_pools(ack, cluster.resource.id, net.vswitch_ids, opts)
    storage = build_storage(ack, net, opts)
    namespace = build_registry(ack, opts)
    role = build_jobs_role(ack, cluster.resource, opts)
    return AckPlatform(
        kubeconfig=cluster.kubeconfig,
        nas_server=storage.nas_server,
        buckets={p: b.bucket for p, b in storage.buckets.items()},
        registry_namespace=namespace.name,
        jobs_role=role.role_name,
        ready=[cluster.resource, *pools],
    )
