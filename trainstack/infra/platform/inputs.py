"""What the platform program reads besides its stack config, named in one place.

The program's own modules take these rules from here (``config``: where the CRD folder is,
``teamaccess``: which kubeconfig is the admin's), and ``trainstack.plan.platformcache`` keys the
cached outputs of an offline plan on exactly these inputs, so a file or variable the program
starts to read must be added here or the cache would not see it change
(tests/plan/test_plan_cache_inputs.py traces a real plan's reads against this list).
Nothing heavy is imported: the cache looks these up before deciding whether to run the program.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from trainstack import platformnames as names
from trainstack.kueue.api import VERSION as KUEUE_VERSION
from trainstack.secretnames import looks_secret
from trainstack.trainer.backend import OPERATOR_KEY, Operator
from trainstack.trainer.versions import JOBSET_VERSION, TRAINER_VERSION

KUBEDL_VERSION = "v0.5.0"
KUBECONFIG_KEY = f"{names.PLATFORM_PROJECT}:kubeconfig"
CRD_SOURCE_KEY = f"{names.KUBEDL_CONFIG_NS}:crdSource"
KUBEDL_VERSION_KEY = f"{names.KUBEDL_CONFIG_NS}:version"

# The variables the program, Pulumi's SDK under mocks and the providers' SDKs read while the
# platform is planned: KUBECONFIG and HOME choose the admin kubeconfig, PATH whether the aliyun
# CLI is there, PULUMI_* the SDK's switches (PULUMI_K8S_*, PULUMI_DISABLE_RESOURCE_REFERENCES)
# and ALICLOUD_* the provider's defaults.
ENV_NAMES = frozenset({"HOME", "KUBECONFIG", "PATH"})
ENV_PREFIXES = ("PULUMI_", "ALICLOUD_", "ALIBABA_CLOUD_")
# Config handed to the SDK through the environment (the whole bag, or one key) may hold a secret
# in clear; the passphrase only opens secrets, which an offline plan never does.
CONFIG_ENV = "PULUMI_CONFIG"
_NOT_CONFIG = frozenset({"PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"})
_FLAGS = frozenset({"", "0", "1", "true", "false", "yes", "no", "on", "off"})


def default_crd_source(version: str) -> str:
    return f"platform/kubedl/{version}"


def crd_folder(values: Mapping[str, str], root: Path) -> Path:
    """The folder ``kubedl:crdSource`` names (its lock and CRD files), as ``config`` reads it."""
    version = values.get(KUBEDL_VERSION_KEY, KUBEDL_VERSION)
    return root / values.get(CRD_SOURCE_KEY, default_crd_source(version))


# Kueue's folder (config_kueue.py), read on an environment that sets any kueue:* key.
KUEUE_NS = "kueue"


def crd_folders(values: Mapping[str, str], root: Path) -> tuple[Path, ...]:
    """Every CRD folder the program reads for an environment: KubeDL's; on a Trainer
    environment (``trainstack:operator: trainer``) Trainer's and JobSet's; on one that queues
    (any ``kueue:*`` key) Kueue's; each where its ``<ns>:crdSource`` puts it or at
    ``platform/<ns>/<version>`` (CrdRelease.folder)."""
    folders = [crd_folder(values, root)]
    others: list[tuple[str, str]] = []
    if values.get(f"{names.PLATFORM_PROJECT}:{OPERATOR_KEY}") == Operator.TRAINER.value:
        others += [
            (Operator.TRAINER.value, TRAINER_VERSION),
            (names.JOBSET_CONFIG_NS, JOBSET_VERSION),
        ]
    if any(k.startswith(KUEUE_NS + ":") for k in values):
        others.append((KUEUE_NS, KUEUE_VERSION))
    for ns, default in others:
        version = values.get(f"{ns}:version", default)
        folders.append(root / values.get(f"{ns}:crdSource", f"platform/{ns}/{version}"))
    return tuple(folders)


def is_kubeconfig_contents(value: str) -> bool:
    """A kubeconfig's text (YAML or one-line JSON) rather than a path to one."""
    return "\n" in value or value.lstrip().startswith("{") or "apiVersion" in value


def admin_kubeconfig_path(kubeconfig: str | None) -> Path | None:
    """kubeconfig mode: the file the admin kubeconfig is read from — ``trainstack:kubeconfig``
    as a path, else ``$KUBECONFIG``'s first file, else ``~/.kube/config`` as the provider reads
    it; None when the config holds the kubeconfig's contents."""
    if kubeconfig is not None and is_kubeconfig_contents(kubeconfig):
        return None
    if kubeconfig is not None:
        return Path(kubeconfig).expanduser()
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), "")
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def config_in_environment(environ: Mapping[str, str]) -> bool:
    """Stack config given through the environment (``PULUMI_CONFIG``, ``PULUMI_CONFIG_<KEY>``):
    the program reads it, and it may hold secrets in clear, so no cache may key on it."""
    return any(
        name == CONFIG_ENV or (name.startswith(CONFIG_ENV + "_") and name not in _NOT_CONFIG)
        for name in environ
    )


def environment_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that may change the program's result, by name. A credential's value
    (``PULUMI_ACCESS_TOKEN``, ``ALICLOUD_SECRET_KEY``) is left out: the offline plan uses none,
    and no digest of a secret is kept; a switch whose name only looks like one
    (``PULUMI_K8S_ENABLE_SECRET_MUTABLE=true``) is kept."""
    return {
        name: value
        for name, value in sorted(environ.items())
        if (name in ENV_NAMES or name.startswith(ENV_PREFIXES))
        and name not in _NOT_CONFIG
        and (not looks_secret(name) or value.strip().lower() in _FLAGS)
    }
