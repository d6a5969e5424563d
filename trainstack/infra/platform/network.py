"""ack: the VPC and one vSwitch per zone the cluster and NAS live in."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig

COMPONENT = "trainstack:platform:Network"


class Network(pulumi.ComponentResource):
    vpc: alicloud.vpc.Network
    vswitches: tuple[alicloud.vpc.Switch, ...]

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
        self.register_outputs({"vpcId": self.vpc.id})

    @property
    def vswitch_ids(self) -> list[pulumi.Output[str]]:
        return [v.id for v in self.vswitches]
