"""The RAM policy document that limits an OSS credential to one team's prefix of some buckets:
ack's per-team RAM roles (iam.py) and, in kubeconfig mode, the policy each team's AccessKey's RAM
user needs (the ``teamOssPolicies`` output). Plain data, so kubeconfig mode builds it without
Alibaba Cloud's SDK.

Syntax: OSS "Authorization syntax and elements"
(https://www.alibabacloud.com/help/en/oss/user-guide/authorization-syntax-and-elements): object
actions on ``acs:oss:*:*:<bucket>/<key pattern>``, bucket actions on ``acs:oss:*:*:<bucket>``;
listing one folder with ``oss:ListObjects`` on the bucket under a ``StringLike`` ``oss:Prefix``
condition, as RAM's example policy for one directory does (its Japanese edition:
https://www.alibabacloud.com/help/ja/doc-detail/142249.htm).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# What ossfs does on a mount: read, write and delete objects, list under its path, and the
# multipart calls a large write (a checkpoint of GBs) needs — ListParts to resume and
# AbortMultipartUpload to give up (OSS API reference, "Multipart upload").
OBJECT_ACTIONS = [
    "oss:GetObject",
    "oss:PutObject",
    "oss:DeleteObject",
    "oss:AbortMultipartUpload",
    "oss:ListParts",
]
BUCKET_ACTIONS = ["oss:ListObjects", "oss:GetBucketInfo"]


def key_prefix(team: str) -> str:
    """A team's folder as an object key prefix: ``<team>/`` (the PVs' path is ``/<team>/…``)."""
    return f"{team}/"


def oss_policy(buckets: Sequence[str], prefix: str) -> dict[str, Any]:
    """Objects under ``prefix`` (``""``: the whole bucket) of ``buckets``, and listing them."""
    objects = {
        "Effect": "Allow",
        "Action": OBJECT_ACTIONS,
        "Resource": [f"acs:oss:*:*:{b}/{prefix}*" for b in buckets],
    }
    bucket_resources = [f"acs:oss:*:*:{b}" for b in buckets]
    if not prefix:
        return {
            "Version": "1",
            "Statement": [
                objects,
                {"Effect": "Allow", "Action": BUCKET_ACTIONS, "Resource": bucket_resources},
            ],
        }
    # ListObjects is a bucket action; oss:Prefix narrows it to the team's folder (RAM policy
    # elements for OSS: the oss:Prefix condition key applies to ListObjects). GetBucketInfo
    # carries no prefix, so under that condition it would be denied: a statement of its own.
    listing = {
        "Effect": "Allow",
        "Action": ["oss:ListObjects"],
        "Resource": bucket_resources,
        "Condition": {"StringLike": {"oss:Prefix": [prefix, f"{prefix}*"]}},
    }
    info = {"Effect": "Allow", "Action": ["oss:GetBucketInfo"], "Resource": bucket_resources}
    return {"Version": "1", "Statement": [objects, listing, info]}


def team_policy(buckets: Sequence[str], team: str) -> dict[str, Any]:
    """Only ``<bucket>/<team>/`` of each bucket: a team credential's whole reach."""
    return oss_policy(buckets, key_prefix(team))


def policy_json(document: dict[str, Any]) -> str:
    """The document as RAM takes it (``aliyun ram CreatePolicy --PolicyDocument``), key order
    fixed so that an unchanged policy is an unchanged string."""
    return json.dumps(document, sort_keys=True)
