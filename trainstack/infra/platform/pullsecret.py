"""Both modes: the image pull secret, from secret config, in every team namespace.

Pods can only use pull secrets from their own namespace, hence one copy per team. The password is
read with ``require_secret`` and only ever handled inside ``apply``, so the Secret's data is a
secret Output: Pulumi encrypts it in state and never shows it in a preview.
"""

from __future__ import annotations

import base64
import json

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra import names
from trainstack.infra.platform.config import RegistryConfig


def docker_config_json(server: str, username: str, password: str) -> str:
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps(
        {"auths": {server: {"username": username, "password": password, "auth": auth}}},
        sort_keys=True,
    )


def registry_password(offline: bool) -> pulumi.Output[str]:
    """``trainstack:registryPassword`` as a secret Output; in an offline plan of a stack where it
    is not set yet (a pending step), a secret placeholder."""
    config = pulumi.Config(names.PLATFORM_PROJECT)
    if offline:
        given = config.get_secret("registryPassword")
        return given if given is not None else pulumi.Output.secret("(not set)")
    return config.require_secret("registryPassword")


def build_pull_secrets(
    registry: RegistryConfig,
    password: pulumi.Input[str],
    namespaces: dict[str, k8s.core.v1.Namespace],
    opts: pulumi.ResourceOptions,
) -> str:
    # apply on a secret Output yields a secret Output: the payload never exists in the clear.
    payload: pulumi.Output[str] = pulumi.Output.secret(password).apply(
        lambda p: docker_config_json(registry.server, registry.username, p)
    )
    for team, ns in namespaces.items():
        k8s.core.v1.Secret(
            f"pull-secret-{team}",
            metadata={"name": names.PULL_SECRET_NAME, "namespace": ns.metadata.name},
            type="kubernetes.io/dockerconfigjson",
            string_data={".dockerconfigjson": payload},
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
            ),
        )
    return names.PULL_SECRET_NAME
