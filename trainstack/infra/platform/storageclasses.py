"""Both modes: the StorageClasses runs claim volumes from.

ack: Alibaba Cloud disk, NAS (a subdirectory per volume on the platform's file system) and OSS
(mounted with the jobs RAM role through RRSA, so no AccessKey sits in a Secret — the same scheme
the renderer's static OSS volumes use, from the platform's ``ossAuth`` output). Elsewhere: one
local-path class, the provisioner kind, minikube and k3s ship with.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform.config import ClusterAccess

DISK_PROVISIONER = names.DISK_CSI_DRIVER
NAS_PROVISIONER = names.NAS_CSI_DRIVER
OSS_PROVISIONER = names.OSS_CSI_DRIVER


def oss_internal_endpoint(region: str) -> str:
    """The VPC endpoint ACK nodes reach OSS through (no internet traffic, no egress fees)."""
    return f"oss-{region}-internal.aliyuncs.com"


def build_ack_storage_classes(
    region: str,
    nas_server: pulumi.Output[str],
    data_bucket: pulumi.Output[str],
    jobs_role: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
) -> dict[str, pulumi.Output[str]]:
    disk = k8s.storage.v1.StorageClass(
        "sc-disk",
        metadata={"name": names.STORAGE_CLASS_DISK},
        provisioner=DISK_PROVISIONER,
        parameters={"type": "cloud_essd", "csi.storage.k8s.io/fstype": "ext4"},
        reclaim_policy="Delete",
        volume_binding_mode="WaitForFirstConsumer",
        allow_volume_expansion=True,
        opts=opts,
    )
    nas = k8s.storage.v1.StorageClass(
        "sc-nas",
        metadata={"name": names.STORAGE_CLASS_NAS},
        provisioner=NAS_PROVISIONER,
        parameters={
            "volumeAs": "subpath",
            "server": nas_server.apply(lambda s: f"{s}:/trainstack/"),
            # Only read when a released volume is deleted (reclaimPolicy Delete): the
            # subdirectory is then archived rather than removed. Under Retain (below) a deleted
            # claim's volume and its subdirectory stay as they are until an admin deletes them.
            "archiveOnDelete": "true",
        },
        mount_options=["nolock,tcp,noresvport", "vers=3"],
        reclaim_policy="Retain",
        volume_binding_mode="Immediate",
        opts=opts,
    )
    oss = k8s.storage.v1.StorageClass(
        "sc-oss",
        metadata={"name": names.STORAGE_CLASS_OSS},
        provisioner=OSS_PROVISIONER,
        parameters={
            "bucket": data_bucket,
            "path": "/",
            "url": oss_internal_endpoint(region),
            "authType": "rrsa",
            "roleName": jobs_role,
            "volumeAs": "subpath",
            "otherOpts": "-o allow_other",
        },
        reclaim_policy="Retain",
        volume_binding_mode="Immediate",
        opts=opts,
    )
    return {
        "disk": disk.metadata.name,
        "nas": nas.metadata.name,
        "oss": oss.metadata.name,
        "default": disk.metadata.name,
    }


def build_local_storage_class(
    cluster: ClusterAccess, opts: pulumi.ResourceOptions
) -> dict[str, pulumi.Output[str]]:
    local = k8s.storage.v1.StorageClass(
        "sc-local",
        metadata={"name": names.STORAGE_CLASS_LOCAL},
        provisioner=cluster.local_provisioner,
        # A deleted claim keeps its data: the artifact claims hold every run's outputs, and the
        # runner Role may delete claims (docs/deploy.md). The local-path provisioner honours
        # Retain (the PV stays Released with its folder on the node).
        reclaim_policy="Retain",
        volume_binding_mode="WaitForFirstConsumer",
        opts=opts,
    )
    return {"local": local.metadata.name, "default": local.metadata.name}
