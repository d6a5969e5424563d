"""kubeconfig mode: the OSS AccessKey Secret the renderer's OSS volumes name, per team namespace.

Only when the stack configures an AccessKey (``trainstack:ossAccessKeyId`` and
``trainstack:ossAccessKeySecret``, both secret config). The OSS CSI driver reads ``akId`` and
``akSecret`` from the Secret a PersistentVolume's ``nodePublishSecretRef`` names, in the run's own
namespace — hence one copy per team, like the pull secret. Both values are read with
``require_secret`` and go into ``stringData`` as secret Outputs, so they are encrypted in state and
shown as ``[secret]`` in every preview and plan. (ack mode needs no Secret: RRSA.)
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform.config import OSS_ACCESS_KEY_KEYS


def build_oss_secrets(
    namespaces: dict[str, k8s.core.v1.Namespace], opts: pulumi.ResourceOptions
) -> str:
    config = pulumi.Config(names.PLATFORM_PROJECT)
    key_id, key_secret = (config.require_secret(k) for k in OSS_ACCESS_KEY_KEYS)
    for team, ns in namespaces.items():
        k8s.core.v1.Secret(
            f"oss-secret-{team}",
            metadata={"name": names.OSS_SECRET_NAME, "namespace": ns.metadata.name},
            type="Opaque",
            string_data={"akId": key_id, "akSecret": key_secret},
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
            ),
        )
    return names.OSS_SECRET_NAME
