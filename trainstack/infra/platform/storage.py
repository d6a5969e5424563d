"""ack: the NAS file system shared by all jobs, and the OSS buckets runs read and write."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, AckConfig
from trainstack.infra.platform.network import Network


@dataclass(frozen=True)
class CloudStorage:
    nas_server: pulumi.Output[str]  # the mount target's domain, what the NAS CSI driver mounts
    buckets: dict[str, alicloud.oss.Bucket]  # purpose -> bucket


def build_storage(ack: AckConfig, net: Network, opts: pulumi.ResourceOptions) -> CloudStorage:
    nas = alicloud.nas.FileSystem(
        "nas", protocol_type="NFS", storage_type=ack.nas_storage_type,
        file_system_type="standard", description=f"{ack.cluster_name} shared storage",
        opts=opts)
    mount = alicloud.nas.MountTarget(
        "nas-mount", file_system_id=nas.id, access_group_name="DEFAULT_VPC_GROUP_NAME",
        network_type="Vpc", vpc_id=net.vpc.id, vswitch_id=net.vswitches[0].id, opts=opts)
    buckets = {
        purpose: alicloud.oss.Bucket(
            f"bucket-{purpose}", bucket=ack.bucket(purpose), storage_class="Standard",
            # Models and checkpoints are what a run produces: keep overwritten versions.
            versioning={"status": "Enabled"} if purpose in ("models", "checkpoints") else None,
            opts=opts)
        for purpose in BUCKET_PURPOSES
    }
    return CloudStorage(nas_server=mount.mount_target_domain, buckets=buckets)
