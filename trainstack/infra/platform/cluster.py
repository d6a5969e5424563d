"""ack: the managed cluster, how `pulumi up` reaches it, who may administer it, its kubeconfig.

Reaching the API server is a configured choice (``trainstack:apiEndpoint``, docs/platform.md):
``public`` creates the internet endpoint (an EIP on the API server's CLB) with an access-control
list of ``apiAllowedCidrs``; ``private`` keeps it inside the VPC, and `pulumi up` must then run
from there. Either way the identity `pulumi up` runs as gets cluster-admin through
``cs.KubernetesPermission`` before any Kubernetes resource is created: a RAM user or role that is
not the account owner has no RBAC rights on a new cluster, and its kubeconfig would be refused.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig
from trainstack.infra.platform.network import Network

COMPONENT = "trainstack:platform:Cluster"
# Installed with the cluster rather than as separate KubernetesAddon resources: ACK installs its
# default storage plugins at creation, and a second resource for the same add-on would fight it
# (pulumi_alicloud cs/managed_kubernetes.py: addons "only works for Create").
# csi-plugin + csi-provisioner provide the disk, NAS and OSS provisioners our StorageClasses use.
CLUSTER_ADDONS = ("flannel", "csi-plugin", "csi-provisioner")


class Cluster(pulumi.ComponentResource):
    resource: alicloud.cs.ManagedKubernetes
    kubeconfig: pulumi.Output[str]
    permission: alicloud.cs.KubernetesPermission | None
    api_acl: pulumi.Output[str] | None  # the allow-list to bind to the API server's listener

    def __init__(
        self,
        name: str,
        ack: AckConfig,
        net: Network,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.resource = alicloud.cs.ManagedKubernetes(
            "cluster",
            name=ack.cluster_name,
            cluster_spec=ack.cluster_spec,
            version=ack.kubernetes_version,
            vswitch_ids=net.vswitch_ids,
            pod_cidr=ack.pod_cidr,
            service_cidr=ack.service_cidr,
            new_nat_gateway=True,  # nodes pull images and pip packages from outside the VPC
            # "Whether to create internet load balancer for API Server ... Only works for Create"
            # (cs/managed_kubernetes.py): the endpoint choice is made once, at creation.
            slb_internet_enabled=ack.api_public,
            enable_rrsa=True,  # OSS volumes assume the jobs RAM role (iam.py) without node keys
            deletion_protection=True,
            addons=[alicloud.cs.ManagedKubernetesAddonArgs(name=a) for a in CLUSTER_ADDONS],
            opts=child,
        )
        self.api_acl = None
        if ack.api_public:
            # ACK: the public and internal endpoints share the API server's CLB, whose listener
            # on 6443 takes a whitelist ACL ("Configure access control policies for the API
            # server", ACK docs). This is that whitelist; docs/platform.md binds it to the listener.
            acl = alicloud.slb.Acl(
                "api-acl", name=f"{ack.cluster_name}-api", ip_version="ipv4", opts=child
            )
            for i, block in enumerate(ack.api_allowed_cidrs):
                alicloud.slb.AclEntryAttachment(
                    f"api-acl-{i}",
                    acl_id=acl.id,
                    entry=block,
                    comment="trainstack apiAllowedCidrs",
                    opts=child,
                )
            self.api_acl = acl.id
        self.permission = None
        if ack.deployer is not None:
            # cs/kubernetes_permission.py: role_type "cluster", role_name "admin"; is_ram_role when
            # the uid is a RAM role's (a CI runner's). Everything on the cluster waits for it.
            self.permission = alicloud.cs.KubernetesPermission(
                "deployer-permission",
                uid=ack.deployer.uid,
                permissions=[
                    {
                        "cluster": self.resource.id,
                        "role_type": "cluster",
                        "role_name": "admin",
                        "is_ram_role": ack.deployer.ram_role,
                    }
                ],
                opts=child,
            )
        cred = alicloud.cs.get_cluster_credential_output(
            cluster_id=self.resource.id, opts=pulumi.InvokeOutputOptions(provider=provider)
        )
        # The credential is an admin kubeconfig: mark it secret before anything can log or store it.
        self.kubeconfig = pulumi.Output.secret(cred.kube_config)
        self.register_outputs({"clusterId": self.resource.id})

    @property
    def ready(self) -> list[pulumi.Resource]:
        return [self.resource, *([self.permission] if self.permission else [])]
