"""ack: the RAM roles OSS volumes mount as: one per team on its own prefix of the platform's
buckets, and the StorageClass's on the data bucket.

One way in: the cluster's RRSA OIDC provider. OSS volumes (the ``trainstack-oss`` StorageClass
and the renderer's static PersistentVolumes, both ``authType: rrsa``) are mounted by the OSS CSI
driver's ossfs pods, which assume this role with their service-account token. The role is
deliberately *not* trusted by the ECS service nor attached to node pools: a node role would hand
the buckets to every process on every node (through the metadata service), and replacing ACK's
worker role would take away what the node components need.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, AckConfig
from trainstack.infra.platform.osspolicy import oss_policy, policy_json, team_policy

# The only service account allowed to assume the jobs role: the OSS CSI driver's ossfs pods. Since
# CSI v1.30.4 they run in namespace ack-csi-fuse (ACK "Announcement on CSI OSS driver upgrade":
# RRSA trust policies must name that namespace) under service account csi-fuse-ossfs (ACK "Mount a
# dynamically provisioned OSS volume using ossfs 2.0", RRSA step 1: the oidc:sub condition value
# is system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs; the namespace cannot be customized).
# Without this oidc:sub condition any pod of any namespace could assume the role with its own token.
OSS_CSI_SERVICE_ACCOUNT = "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"
# ram/policy.py: RAM keeps at most 5 versions of a policy; without rotation the 6th update fails.
ROTATE_STRATEGY = "DeleteOldestNonDefaultVersionWhenLimitExceeded"


def jobs_role_name(ack: AckConfig) -> str:
    return f"{ack.cluster_name}-jobs"


def trust_policy(rrsa: Any) -> str:
    """Who may assume the role: service accounts of this cluster, through its RRSA provider.

    ``rrsa`` is the cluster's RRSA metadata; the cluster is created with RRSA enabled, so a
    missing provider is a broken cluster, not something to paper over with a weaker policy.
    """
    arn = getattr(rrsa, "ram_oidc_provider_arn", None)
    issuer = getattr(rrsa, "rrsa_oidc_issuer_url", None)
    if not (arn and issuer):
        raise ValueError(
            "the cluster reports no RRSA OIDC provider (enable_rrsa): the jobs role "
            "could not be assumed by the OSS CSI driver"
        )
    statements = [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Federated": [arn]},
            "Condition": {
                "StringEquals": {
                    "oidc:aud": "sts.aliyuncs.com",
                    "oidc:iss": issuer,
                    "oidc:sub": OSS_CSI_SERVICE_ACCOUNT,
                }
            },
        }
    ]
    return policy_json({"Version": "1", "Statement": statements})


# ram/role.py: role_name is "at most 64 characters".
ROLE_NAME_MAX = 64


def team_role_name(ack: AckConfig, team: str) -> str:
    """``<cluster>-jobs-<team>``, shortened with a digest of the team when over RAM's limit."""
    name = f"{jobs_role_name(ack)}-{team}"
    if len(name) <= ROLE_NAME_MAX:
        return name
    digest = hashlib.sha256(team.encode()).hexdigest()[:8]
    return f"{jobs_role_name(ack)}-{team}"[: ROLE_NAME_MAX - 9].rstrip("-") + "-" + digest


def _role(
    name: str,
    role_name: str,
    description: str,
    document: dict[str, Any],
    cluster: alicloud.cs.ManagedKubernetes,
    opts: pulumi.ResourceOptions,
) -> alicloud.ram.Role:
    role = alicloud.ram.Role(
        name,
        role_name=role_name,
        assume_role_policy_document=cluster.rrsa_metadata.apply(trust_policy),
        description=description,
        opts=opts,
    )
    policy = alicloud.ram.Policy(
        f"{name}-oss-policy" if name != "jobs-role" else "jobs-oss-policy",
        policy_name=f"{role_name}-oss",
        policy_document=policy_json(document),
        description=description,
        rotate_strategy=ROTATE_STRATEGY,
        opts=opts,
    )
    alicloud.ram.RolePolicyAttachment(
        f"{name}-oss-attachment" if name != "jobs-role" else "jobs-oss-attachment",
        role_name=role.role_name,
        policy_name=policy.policy_name,
        policy_type="Custom",
        opts=opts,
    )
    return role


def build_jobs_role(
    ack: AckConfig, cluster: alicloud.cs.ManagedKubernetes, opts: pulumi.ResourceOptions
) -> alicloud.ram.Role:
    """The role of the ``trainstack-oss`` StorageClass: the provisioner picks each volume's path
    in the data bucket, so no team chooses what it reaches. Static PVs use the team roles."""
    return _role(
        "jobs-role",
        jobs_role_name(ack),
        "trainstack OSS StorageClass volumes",
        oss_policy([ack.bucket("data")], ""),
        cluster,
        opts,
    )


def build_team_roles(
    ack: AckConfig,
    teams: list[str],
    cluster: alicloud.cs.ManagedKubernetes,
    opts: pulumi.ResourceOptions,
) -> dict[str, pulumi.Output[str]]:
    """Per team a role whose policy names only ``<bucket>/<team>/`` of the platform's buckets
    (the artifact store's ``<team>/`` included). The trust is the same as the jobs role's: the
    CSI driver's ossfs pods assume whichever role a PV names, so the team's own service account
    cannot be the ``oidc:sub``; what keeps team A off team B's role is the volume admission
    policy, which admits a team's OSS PVs only with its own ``roleName`` (volumeguard.py)."""
    buckets = [ack.bucket(p) for p in BUCKET_PURPOSES]
    return {
        team: _role(
            f"team-role-{team}",
            team_role_name(ack, team),
            f"trainstack team {team}: OSS volumes under {team}/",
            team_policy(buckets, team),
            cluster,
            opts,
        ).role_name
        for team in teams
    }
