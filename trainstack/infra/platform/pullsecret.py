"""Both modes: the image pull secret, from secret config, in every team namespace (and in
KubeDL's, for its controller: ``kubedl.py``).

Pods can only use pull secrets from their own namespace, hence one copy per team. The password is
read with ``require_secret`` and only ever handled inside ``apply``, so the Secret's data is a
secret Output: Pulumi encrypts it in state and never shows it in a preview.
"""

from __future__ import annotations

import base64
import json

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
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


def pull_secret_payload(
    registry: RegistryConfig, password: pulumi.Input[str]
) -> pulumi.Output[str]:
    """The ``.dockerconfigjson`` for ``registry``: a secret Output (apply on a secret Output
    yields a secret Output, so the payload never exists in the clear)."""
    return pulumi.Output.secret(password).apply(
        lambda p: docker_config_json(registry.server, registry.username, p)
    )


def pull_secret(
    resource_name: str,
    namespace: pulumi.Input[str],
    payload: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Secret:
    """The pull secret ``names.PULL_SECRET_NAME`` in one namespace."""
    return k8s.core.v1.Secret(
        resource_name,
        metadata={"name": names.PULL_SECRET_NAME, "namespace": namespace},
        type="kubernetes.io/dockerconfigjson",
        string_data={".dockerconfigjson": payload},
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
        ),
    )


def build_pull_secrets(
    registry: RegistryConfig,
    password: pulumi.Input[str],
    namespaces: dict[str, k8s.core.v1.Namespace],
    opts: pulumi.ResourceOptions,
) -> str:
    payload = pull_secret_payload(registry, password)
    for team, ns in namespaces.items():
        pull_secret(f"pull-secret-{team}", ns.metadata.name, payload, opts)
    return names.PULL_SECRET_NAME
