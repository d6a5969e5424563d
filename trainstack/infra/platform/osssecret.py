"""kubeconfig mode: the OSS AccessKey Secret the renderer's OSS volumes name, in each team
namespace that has a key, holding that team's key only (config_oss.py says why and how it is set).

The OSS CSI driver reads ``akId`` and ``akSecret`` from the Secret a PersistentVolume's
``nodePublishSecretRef`` names, in the run's own namespace. The values are read with
``require_secret``/``require_secret_object`` and go into ``stringData`` as secret Outputs, so they
are encrypted in state and shown as ``[secret]`` in every preview and plan; a team's values are
picked out of the secret object inside ``apply``, whose result stays secret. (ack mode needs no
Secret: RRSA.)
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform.config_oss import (
    KEY_FIELDS,
    OSS_ACCESS_KEY_KEYS,
    TEAM_KEYS,
    OssKeys,
)


def _team_key(keys: pulumi.Output[Any], team: str) -> pulumi.Output[dict[str, str]]:
    key_id, key_secret = KEY_FIELDS
    return keys.apply(
        lambda all_keys: {"akId": all_keys[team][key_id], "akSecret": all_keys[team][key_secret]}
    )


def build_oss_secrets(
    namespaces: dict[str, k8s.core.v1.Namespace], keys: OssKeys, opts: pulumi.ResourceOptions
) -> dict[str, str]:
    """Team -> the Secret's name, for the teams ``keys`` names (config.py checked them all)."""
    config = pulumi.Config(names.PLATFORM_PROJECT)
    if keys.shared:  # one team: the same thing as that team's own key
        key_id, key_secret = (config.require_secret(k) for k in OSS_ACCESS_KEY_KEYS)
        shared = pulumi.Output.all(key_id, key_secret).apply(
            lambda pair: {"akId": pair[0], "akSecret": pair[1]}
        )

        def key_of(team: str) -> pulumi.Output[dict[str, str]]:
            return shared
    else:
        per_team = config.require_secret_object(TEAM_KEYS)

        def key_of(team: str) -> pulumi.Output[dict[str, str]]:
            return _team_key(per_team, team)

    created: dict[str, str] = {}
    for team in keys.teams:
        k8s.core.v1.Secret(
            f"oss-secret-{team}",
            metadata={"name": names.OSS_SECRET_NAME, "namespace": namespaces[team].metadata.name},
            type="Opaque",
            string_data=key_of(team),
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
            ),
        )
        created[team] = names.OSS_SECRET_NAME
    return created
