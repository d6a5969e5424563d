"""ack: the ACR (personal edition) namespace and repositories component images are pushed to."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig


def build_registry(ack: AckConfig, opts: pulumi.ResourceOptions) -> alicloud.cr.Namespace:
    namespace = alicloud.cr.Namespace(
        "acr-namespace", name=ack.registry_namespace,
        auto_create=False,  # a typo in an image name must fail, not create a stray repository
        default_visibility="PRIVATE", opts=opts)
    for repo in ack.registry_repos:
        alicloud.cr.Repo(
            f"acr-{repo}", namespace=namespace.name, name=repo, repo_type="PRIVATE",
            summary=f"trainstack component images: {repo}", opts=opts)
    return namespace
