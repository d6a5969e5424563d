"""Where runs read and write, and the artifact store their outputs go to.

ack: the NAS file system shared by all jobs (in the cluster's first zone, encrypted), the OSS
buckets (encrypted, private, with lifecycle rules), the jobs RAM role that reaches them through
RRSA, and the StorageClasses. kubeconfig mode: the local StorageClass and, in every team
namespace, the artifact claim (``pvc://<claim>/``) — created here unless
``trainstack:artifactClaim`` names one that exists. The NAS, buckets and claims are protected
by ``protection.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.logplace import DEFAULT_RETENTION_DAYS, expiring_prefix
from trainstack.infra.platform.config import ClusterAccess
from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, AckConfig
from trainstack.infra.platform.storageclasses import (
    build_ack_storage_classes,
    build_local_storage_class,
)

if TYPE_CHECKING:
    # Alibaba Cloud's SDK is imported where ack builds with it: a kubeconfig environment's plan
    # (`trainstack plan RUN --env local`) never loads it.
    import pulumi_alicloud as alicloud

    from trainstack.infra.platform.network import Network

COMPONENT = "trainstack:platform:Storage"
ARTIFACT_CLAIM = "trainstack-artifacts"
# Versioned buckets keep what a run overwrote; after this many days the old versions go.
NONCURRENT_DAYS = 30
ABORT_MULTIPART_DAYS = 7
VERSIONED = ("models", "checkpoints", "artifacts")
ARTIFACTS = "artifacts"  # the bucket behind the artifact store


def bucket_lifecycle(
    purpose: str, teams: list[str] | None = None, log_days: int = DEFAULT_RETENTION_DAYS
) -> list[alicloud.oss.BucketLifecycleRuleArgsDict]:
    """Abandoned multipart uploads (a killed checkpoint write) are billed until aborted; on the
    artifacts bucket, each team's expiring replica logs go after `log_days`
    (trainstack.infra.logplace).

    OSS refuses rules whose prefixes overlap when they hold the same action (Expiration,
    NoncurrentVersionExpiration, AbortMultipartUpload: OSS error 0014-00000084) or share one
    prefix (0014-00000085): the housekeeping rule (prefix "") holds no Expiration, and each team's
    log rule holds only that, under a prefix of its own. The bucket is versioned, so an expired
    log leaves a noncurrent version, which the housekeeping rule removes NONCURRENT_DAYS later."""
    rule: alicloud.oss.BucketLifecycleRuleArgsDict = {
        "id": "trainstack-housekeeping",
        "enabled": True,
        "prefix": "",
        "abort_multipart_uploads": [{"days": ABORT_MULTIPART_DAYS}],
    }
    if purpose in VERSIONED:
        rule["noncurrent_version_expirations"] = [{"days": NONCURRENT_DAYS}]
    rules = [rule]
    if purpose == ARTIFACTS:
        rules += [
            {
                "id": f"trainstack-logs-{team}",
                "enabled": True,
                "prefix": expiring_prefix(team),
                "expirations": [{"days": log_days}],
            }
            for team in sorted(teams or ())
        ]
    return rules


class Storage(pulumi.ComponentResource):
    storage_classes: dict[str, pulumi.Output[str]]
    artifact_store: pulumi.Output[str]
    nas_server: pulumi.Output[str] | None
    buckets: dict[str, pulumi.Output[str]]
    jobs_role: pulumi.Output[str] | None
    team_roles: dict[str, pulumi.Output[str]]  # ack: team -> its RAM role for OSS volumes

    def __init__(
        self,
        name: str,
        *,
        k8s_provider: pulumi.ProviderResource,
        ack: AckConfig | None = None,
        net: Network | None = None,
        cluster: alicloud.cs.ManagedKubernetes | None = None,
        cloud_provider: pulumi.ProviderResource | None = None,
        access: ClusterAccess | None = None,
        namespaces: dict[str, k8s.core.v1.Namespace] | None = None,
        teams: list[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        kube = pulumi.ResourceOptions(parent=self, provider=k8s_provider)
        self.nas_server = None
        self.buckets = {}
        self.jobs_role = None
        self.team_roles = {}
        if ack is not None:
            from trainstack.infra.platform.iam import build_jobs_role, build_team_roles

            assert net is not None and cluster is not None and cloud_provider is not None
            cloud = pulumi.ResourceOptions(parent=self, provider=cloud_provider)
            self._cloud(ack, net, cloud, sorted(teams or ()))
            self.jobs_role = build_jobs_role(ack, cluster, cloud).role_name
            self.team_roles = build_team_roles(ack, list(teams or ()), cluster, cloud)
            assert self.nas_server is not None
            self.storage_classes = build_ack_storage_classes(
                ack.region, self.nas_server, self.buckets["data"], self.jobs_role, kube
            )
            # The artifact store: a prefix of the artifacts bucket (runs write
            # <artifactStore>/<team>/<run>/<output>/).
            self.artifact_store = self.buckets[ARTIFACTS].apply(lambda b: f"oss://{b}/")
        else:
            assert access is not None and namespaces is not None
            self.storage_classes = build_local_storage_class(access, kube)
            claim = access.artifact_claim or ARTIFACT_CLAIM
            if access.artifact_claim is None:
                for team, ns in namespaces.items():
                    k8s.core.v1.PersistentVolumeClaim(
                        f"artifacts-{team}",
                        metadata={
                            "name": ARTIFACT_CLAIM,
                            "namespace": ns.metadata.name,
                            "labels": {"app.kubernetes.io/managed-by": "trainstack"},
                        },
                        spec={
                            "access_modes": ["ReadWriteOnce"],
                            "storage_class_name": names.STORAGE_CLASS_LOCAL,
                            "resources": {"requests": {"storage": access.artifact_size}},
                        },
                        opts=kube,
                    )
            self.artifact_store = pulumi.Output.from_input(f"pvc://{claim}/")
        self.register_outputs({"artifactStore": self.artifact_store})

    def _cloud(
        self, ack: AckConfig, net: Network, opts: pulumi.ResourceOptions, teams: list[str]
    ) -> None:
        import pulumi_alicloud as alicloud

        nas = alicloud.nas.FileSystem(
            "nas",
            protocol_type="NFS",
            storage_type=ack.nas_storage_type,
            file_system_type="standard",
            # nas/file_system.py, description: starts with a letter; letters, digits, colons,
            # underscores and dashes only (no spaces).
            description=f"{ack.cluster_name}-shared-storage",
            # nas/file_system.py: zone_id is optional for standard (a random eligible zone is
            # picked); pin it to the cluster's first zone, where its mount target lives.
            # encrypt_type 1 = "NAS managed key", supported for standard file systems.
            zone_id=ack.zones[0],
            encrypt_type=1,
            opts=opts,
        )
        # Its own permission group: the default VPC group lets every address of the VPC mount the
        # file system read-write (NAS "Permission groups"); this one admits the node vSwitches.
        group = alicloud.nas.AccessGroup(
            "nas-access-group",
            access_group_name=f"{ack.cluster_name}-nodes",
            access_group_type="Vpc",
            file_system_type="standard",
            description="trainstack node vSwitches",
            opts=opts,
        )
        rules = [
            alicloud.nas.AccessRule(
                f"nas-access-{i}",
                access_group_name=group.access_group_name,
                file_system_type="standard",
                source_cidr_ip=cidr,
                rw_access_type="RDWR",
                user_access_type="no_squash",  # training images run as root (podsecurity.py)
                priority=1,
                opts=opts,
            )
            for i, cidr in enumerate(ack.vswitch_cidrs)
        ]
        mount = alicloud.nas.MountTarget(
            "nas-mount",
            file_system_id=nas.id,
            access_group_name=group.access_group_name,
            network_type="Vpc",
            vpc_id=net.vpc.id,
            vswitch_id=net.vswitches[0].id,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=rules)),
        )
        self.nas_server = mount.mount_target_domain
        for purpose in BUCKET_PURPOSES:
            bucket = alicloud.oss.Bucket(
                f"bucket-{purpose}",
                bucket=ack.bucket(purpose),
                storage_class="Standard",
                # Models, checkpoints and artifacts are what runs produce: keep overwritten
                # versions (for NONCURRENT_DAYS).
                versioning={"status": "Enabled"} if purpose in VERSIONED else None,
                server_side_encryption_rule={"sse_algorithm": "AES256"},
                lifecycle_rules=bucket_lifecycle(purpose, teams, ack.log_retention_days),
                opts=opts,
            )
            alicloud.oss.BucketPublicAccessBlock(
                f"bucket-{purpose}-public-access-block",
                bucket=bucket.bucket,
                block_public_access=True,
                opts=opts,
            )
            self.buckets[purpose] = bucket.bucket
