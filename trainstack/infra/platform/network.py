"""ack: the VPC and one vSwitch per zone the cluster and NAS live in."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig


@dataclass(frozen=True)
class Network:
    vpc: alicloud.vpc.Network
    vswitches: tuple[alicloud.vpc.Switch, ...]

    @property
    def vswitch_ids(self) -> list[pulumi.Output[str]]:
        return [v.id for v in self.vswitches]


def build_network(ack: AckConfig, opts: pulumi.ResourceOptions) -> Network:
    vpc = alicloud.vpc.Network(
        "vpc", vpc_name=ack.cluster_name, cidr_block=ack.vpc_cidr, opts=opts)
    vswitches = tuple(
        alicloud.vpc.Switch(
            f"vsw-{zone}", vswitch_name=f"{ack.cluster_name}-{zone}", vpc_id=vpc.id,
            cidr_block=cidr, zone_id=zone, opts=opts)
        for zone, cidr in zip(ack.zones, ack.vswitch_cidrs, strict=True))
    return Network(vpc=vpc, vswitches=vswitches)
