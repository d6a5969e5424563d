"""ack: the managed cluster, its add-ons (network plugin, CSI) and its kubeconfig (a secret)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig
from trainstack.infra.platform.network import Network

# Installed with the cluster rather than as separate KubernetesAddon resources: ACK installs its
# default storage plugins at creation, and a second resource for the same add-on would fight it.
# csi-plugin + csi-provisioner provide the disk, NAS and OSS provisioners our StorageClasses use.
CLUSTER_ADDONS = ("flannel", "csi-plugin", "csi-provisioner")


@dataclass(frozen=True)
class Cluster:
    resource: alicloud.cs.ManagedKubernetes
    kubeconfig: pulumi.Output[str]


def build_cluster(ack: AckConfig, net: Network, opts: pulumi.ResourceOptions) -> Cluster:
    cluster = alicloud.cs.ManagedKubernetes(
        "cluster",
        name=ack.cluster_name,
        cluster_spec=ack.cluster_spec,
        version=ack.kubernetes_version,
        vswitch_ids=net.vswitch_ids,
        pod_cidr=ack.pod_cidr,
        service_cidr=ack.service_cidr,
        new_nat_gateway=True,  # nodes pull images and pip packages from outside the VPC
        slb_internet_enabled=False,  # the API server is reached from inside the VPC only
        enable_rrsa=True,  # OSS volumes assume the jobs RAM role (iam.py) without node-wide keys
        deletion_protection=True,
        addons=[alicloud.cs.ManagedKubernetesAddonArgs(name=a) for a in CLUSTER_ADDONS],
        opts=opts,
    )
    cred = alicloud.cs.get_cluster_credential_output(
        cluster_id=cluster.id, opts=pulumi.InvokeOutputOptions(provider=opts.provider))
    # The credential is an admin kubeconfig: mark it secret before anything can log or store it.
    return Cluster(resource=cluster, kubeconfig=pulumi.Output.secret(cred.kube_config))
