"""ack: the managed cluster, how `pulumi up` reaches it, who may administer it, its kubeconfig.

Reaching the API server is a configured choice (``trainstack:apiEndpoint``, docs/platform.md):
``public`` creates the internet endpoint (an EIP on the API server's CLB) with an access-control
list of ``apiAllowedCidrs``; ``private`` keeps it inside the VPC, and `pulumi up` must then run
from there. Either way the identity `pulumi up` runs as gets cluster-admin through
``cs.KubernetesPermission`` before any Kubernetes resource is created: a RAM user or role that is
not the account owner has no RBAC rights on a new cluster, and its kubeconfig would be refused.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig
from trainstack.infra.platform.network import Network

COMPONENT = "trainstack:platform:Cluster"
# Installed with the cluster rather than as separate KubernetesAddon resources: ACK installs its
# default storage plugins at creation, and a second resource for the same add-on would fight it
# (pulumi_alicloud cs/managed_kubernetes.py: addons "only works for Create").
# csi-plugin + csi-provisioner provide the disk, NAS and OSS provisioners our StorageClasses use.
# The CNI is Terway with NetworkPolicy on: flannel enforces no NetworkPolicy and a cluster's CNI
# cannot be changed after creation (ACK, "ACK managed cluster network planning",
# https://www.alibabacloud.com/help/en/doc-detail/86500.htm). "terway-eniip" is Terway's add-on
# (pulumi_alicloud 4.0 cs/_inputs.py:1831, ManagedKubernetesAddonArgs: "Network-terway is
# required, Conflicts With Network-flannel"); its config key NetworkPolicy (the docstring's
# example sets it, cs/managed_kubernetes.py:2183) is what ACK's Terraform guide sets to "true"
# to enforce Kubernetes network policies (https://www.alibabacloud.com/help/en/ack/
# ack-managed-and-ack-dedicated/developer-reference/use-terraform-to-manage-plug-ins,
# "Configure network add-ons").
TERWAY = "terway-eniip"
TERWAY_CONFIG = {"NetworkPolicy": "true"}
CLUSTER_ADDONS: tuple[tuple[str, dict[str, str] | None], ...] = (
    (TERWAY, TERWAY_CONFIG),
    ("csi-plugin", None),
    ("csi-provisioner", None),
)


def addon_args() -> list[alicloud.cs.ManagedKubernetesAddonArgs]:
    return [
        alicloud.cs.ManagedKubernetesAddonArgs(
            name=name, config=None if config is None else json.dumps(config, sort_keys=True)
        )
        for name, config in CLUSTER_ADDONS
    ]


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
            # "[Terway Specific] The vswitches for the pod network when using Terway ... Only
            # works for Create" (cs/managed_kubernetes.py:118, pod_vswitch_ids); pod_cidr is
            # "[Flannel Specific]" (:117) and left unset.
            pod_vswitch_ids=net.pod_vswitch_ids,
            service_cidr=ack.service_cidr,
            new_nat_gateway=True,  # nodes pull images and pip packages from outside the VPC
            # "Whether to create internet load balancer for API Server ... Only works for Create"
            # (cs/managed_kubernetes.py): the endpoint choice is made once, at creation.
            slb_internet_enabled=ack.api_public,
            enable_rrsa=True,  # OSS volumes assume the jobs RAM role (iam.py) without node keys
            deletion_protection=True,
            addons=addon_args(),
            opts=child,
        )
        self.api_acl = None
        self.acl_binding: pulumi.Resource | None = None
        if ack.api_public:
            # ACK: the public and internal endpoints share the API server's CLB, whose listener
            # on 6443 takes a whitelist ACL ("Configure API server access control", ACK docs).
            # The whitelist must hold the control plane's 100.104.0.0/16 and the VPC's CIDR, or
            # kubelets, the CSI plugins and the control plane itself are refused and nodes go
            # NotReady; then the blocks apiAllowedCidrs lists.
            acl = alicloud.slb.Acl(
                "api-acl", name=f"{ack.cluster_name}-api", ip_version="ipv4", opts=child
            )
            entries = [
                *[(b, "ACK control plane and node traffic") for b in required_api_cidrs(ack)],
                *[
                    (b, "trainstack apiAllowedCidrs")
                    for b in ack.api_allowed_cidrs
                    if b not in required_api_cidrs(ack)  # the ACL refuses a duplicate entry
                ],
            ]
            attachments = [
                alicloud.slb.AclEntryAttachment(
                    f"api-acl-{i}", acl_id=acl.id, entry=block, comment=comment, opts=child
                )
                for i, (block, comment) in enumerate(entries)
            ]
            self.api_acl = acl.id
            self.acl_binding = bind_api_acl(
                ack, self.resource.slb_id, acl.id, attachments, pulumi.ResourceOptions(parent=self)
            )
        self.permission = None
        if ack.deployer is not None:
            # cs/kubernetes_permission.py: role_type "cluster", role_name "admin"; is_ram_role when
            # the uid is a RAM role's (a CI runner's). Everything on the cluster waits for it.
            # Its docstring says the call "overwrites the permissions granted to the user", which
            # was the API's default mode; the bridged Terraform resource has, since
            # terraform-provider-alicloud v1.222.0 (pulumi-alicloud 4.0 bridges v1.285.0 or
            # later), called UpdateUserPermissions with Mode "patch" on create and "delete" with
            # only its own entries on destroy (alicloud/resource_alicloud_cs_kubernetes_
            # permissions.go: manageUserPermissions(ModePatch, …)). So a second environment's
            # grant to the same identity adds its cluster and removes nothing of the first's, as
            # long as each stack lists only its own cluster, as this one does.
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
        extra = [r for r in (self.permission, self.acl_binding) if r is not None]
        return [self.resource, *extra]


# ACK "Configure API server access control": the control plane's range, always.
ACK_CONTROL_PLANE_CIDR = "100.104.0.0/16"
ACL_LISTENER_PORT = 6443
ALIYUN_CLI = "aliyun"
API_ACL_CLI_MISSING = (
    "trainstack:apiEndpoint is public: `pulumi up` binds the API allow-list to the API server's "
    "listener with the aliyun CLI, which is not on PATH; install it (Alibaba Cloud CLI, "
    "credentials from ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET or its "
    "profile), or set trainstack:apiEndpoint private and run `pulumi up` inside the VPC"
)
# The listener call. Values reach it as environment variables, expanded by the shell as data,
# never as code; they are ids the provider returns, not anything a user typed.
_SET_ACL = (
    'aliyun slb SetLoadBalancerTCPListenerAttribute --RegionId "$TS_REGION" '
    '--LoadBalancerId "$TS_LB" --ListenerPort "$TS_PORT" --AclStatus {status}'
)


def required_api_cidrs(ack: AckConfig) -> list[str]:
    """What the API server's whitelist must hold for the cluster to work: the control plane's
    range and the VPC's CIDR (which holds every node vSwitch)."""
    return [ACK_CONTROL_PLANE_CIDR, ack.vpc_cidr]


def bind_api_acl(
    ack: AckConfig,
    load_balancer: pulumi.Input[str],
    acl: pulumi.Input[str],
    entries: list[alicloud.slb.AclEntryAttachment],
    opts: pulumi.ResourceOptions,
) -> pulumi.Resource:
    """Turn the whitelist on for the API server's 6443 listener as part of `pulumi up` (and off
    on destroy). ACK creates that CLB and its listener, so no provider resource owns them: the
    SLB API's SetLoadBalancerTCPListenerAttribute (AclStatus, AclType, AclId) is called through
    the aliyun CLI, after every entry is in the list. Until it has run, the public endpoint admits
    any source: the window is the cluster's creation plus this call (docs/platform.md)."""
    from pulumi_command import local

    on = _SET_ACL.format(status="on") + ' --AclType white --AclId "$TS_ACL"'
    return local.Command(
        "api-acl-binding",
        create=on,
        update=on,
        delete=_SET_ACL.format(status="off"),
        interpreter=["/bin/sh", "-c"],
        environment={
            "TS_REGION": ack.region,
            "TS_LB": load_balancer,
            "TS_ACL": acl,
            "TS_PORT": str(ACL_LISTENER_PORT),
        },
        triggers=[load_balancer, acl],
        # A new ACL replaces the binding: its delete (AclStatus off) must run before the new
        # create (on), not after it as Pulumi's create-before-delete would, which would leave
        # the listener with no access control at all.
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=entries, delete_before_replace=True)
        ),
    )
