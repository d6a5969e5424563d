"""ack: the VPC and, per zone, a vSwitch the nodes and NAS live in and one Terway gives pods
their addresses from (pulumi_alicloud 4.0 cs/managed_kubernetes.py:118, pod_vswitch_ids: "It is
recommended that `pod_vswitch_ids` is not belong to `vswitch_ids` but must be in same
availability zones"). The NAS access group lists the node vSwitches only (storage.py): Terway
pods reach the VPC from their own addresses, so a pod cannot speak NFS to the mount target."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig

COMPONENT = "trainstack:platform:Network"


class Network(pulumi.ComponentResource):
    vpc: alicloud.vpc.Network
    vswitches: tuple[alicloud.vpc.Switch, ...]
    pod_vswitches: tuple[alicloud.vpc.Switch, ...]

    def __init__(
        self,
        name: str,
        ack: AckConfig,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.vpc = alicloud.vpc.Network(
            "vpc", vpc_name=ack.cluster_name, cidr_block=ack.vpc_cidr, opts=child
        )
        self.vswitches = tuple(
            alicloud.vpc.Switch(
                f"vsw-{zone}",
                vswitch_name=f"{ack.cluster_name}-{zone}",
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                zone_id=zone,
                opts=child,
            )
            for zone, cidr in zip(ack.zones, ack.vswitch_cidrs, strict=True)
        )
        self.pod_vswitches = tuple(
            alicloud.vpc.Switch(
                f"vsw-pods-{zone}",
                vswitch_name=f"{ack.cluster_name}-pods-{zone}",
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                zone_id=zone,
                opts=child,
            )
            for zone, cidr in zip(ack.zones, ack.pod_vswitch_cidrs, strict=True)
        )
        self.register_outputs({"vpcId": self.vpc.id})

    @property
    def vswitch_ids(self) -> list[pulumi.Output[str]]:
        return [v.id for v in self.vswitches]

    @property
    def pod_vswitch_ids(self) -> list[pulumi.Output[str]]:
        return [v.id for v in self.pod_vswitches]
