"""ack: the RAM role training jobs run as, allowed to use the platform's buckets and no others."""

from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, AckConfig


def jobs_role_name(ack: AckConfig) -> str:
    return f"{ack.cluster_name}-jobs"


def build_jobs_role(ack: AckConfig, opts: pulumi.ResourceOptions) -> alicloud.ram.Role:
    trust = {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": ["ecs.aliyuncs.com"]}}]}
    role = alicloud.ram.Role(
        "jobs-role", role_name=jobs_role_name(ack),
        assume_role_policy_document=json.dumps(trust, sort_keys=True),
        description="trainstack training jobs", opts=opts)
    resources = [f"acs:oss:*:*:{ack.bucket(p)}{suffix}"
                 for p in BUCKET_PURPOSES for suffix in ("", "/*")]
    document = {"Version": "1", "Statement": [{
        "Effect": "Allow", "Action": ["oss:GetObject", "oss:PutObject", "oss:DeleteObject",
                                      "oss:ListObjects", "oss:GetBucketInfo"],
        "Resource": resources}]}
    policy = alicloud.ram.Policy(
        "jobs-oss-policy", policy_name=f"{jobs_role_name(ack)}-oss",
        policy_document=json.dumps(document, sort_keys=True),
        description="read and write the trainstack buckets", opts=opts)
    alicloud.ram.RolePolicyAttachment(
        "jobs-oss-attachment", role_name=role.role_name, policy_name=policy.policy_name,
        policy_type="Custom", opts=opts)
    return role
