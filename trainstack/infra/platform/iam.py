"""ack: the RAM role training jobs run as, allowed to use the platform's buckets and no others.

One way in: the cluster's RRSA OIDC provider. OSS volumes (the ``trainstack-oss`` StorageClass
and the renderer's static PersistentVolumes, both ``authType: rrsa``) are mounted by the OSS CSI
driver's ossfs pods, which assume this role with their service-account token. The role is
deliberately *not* trusted by the ECS service nor attached to node pools: a node role would hand
the buckets to every process on every node (through the metadata service), and replacing ACK's
worker role would take away what the node components need.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, AckConfig

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
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


def build_jobs_role(
    ack: AckConfig, cluster: alicloud.cs.ManagedKubernetes, opts: pulumi.ResourceOptions
) -> alicloud.ram.Role:
    role = alicloud.ram.Role(
        "jobs-role",
        role_name=jobs_role_name(ack),
        assume_role_policy_document=cluster.rrsa_metadata.apply(trust_policy),
        description="trainstack training jobs",
        opts=opts,
    )
    resources = [
        f"acs:oss:*:*:{ack.bucket(p)}{suffix}" for p in BUCKET_PURPOSES for suffix in ("", "/*")
    ]
    document = {
        "Version": "1",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "oss:GetObject",
                    "oss:PutObject",
                    "oss:DeleteObject",
                    "oss:ListObjects",
                    "oss:GetBucketInfo",
                ],
                "Resource": resources,
            }
        ],
    }
    policy = alicloud.ram.Policy(
        "jobs-oss-policy",
        policy_name=f"{jobs_role_name(ack)}-oss",
        policy_document=json.dumps(document, sort_keys=True),
        description="read and write the trainstack buckets",
        rotate_strategy=ROTATE_STRATEGY,
        opts=opts,
    )
    alicloud.ram.RolePolicyAttachment(
        "jobs-oss-attachment",
        role_name=role.role_name,
        policy_name=policy.policy_name,
        policy_type="Custom",
        opts=opts,
    )
    return role
