"""Kubeconfigs that log in as a team's ServiceAccount: the cluster's endpoint and CA, read from
the admin kubeconfig, with a token. Both the platform program (its legacy ``teamKubeconfigs``,
teamaccess.py) and ``trainstack scope publish`` (a bound token, deploy/scope.py) build them here;
nothing in this module needs Pulumi, so ``scope publish`` does not import the provider SDKs.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainstack.infra.platform.config import MAX_KUBECONFIG_BYTES
from trainstack.infra.platform.inputs import admin_kubeconfig_path
from trainstack.platformnames import RUNNER_ACCOUNT
from trainstack.regularfile import read_regular


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is and how to trust it, read from an admin kubeconfig."""

    server: str
    ca_data: str | None  # base64 PEM, as kubeconfig's certificate-authority-data
    insecure: bool = False


def endpoint_of(
    kubeconfig: str, context: str | None = None, base: Path | None = None
) -> Endpoint | None:
    """The cluster of ``context`` (default: current-context, else the only cluster) in a
    kubeconfig's text; None when it names none. A ``certificate-authority`` file is read (relative
    to ``base``, the kubeconfig's folder) so the scoped kubeconfig stands alone."""
    try:
        doc = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return None
    if not isinstance(doc, dict):
        return None
    clusters = {
        c.get("name"): c.get("cluster") or {}
        for c in doc.get("clusters") or []
        if isinstance(c, dict)
    }
    contexts = {
        c.get("name"): c.get("context") or {}
        for c in doc.get("contexts") or []
        if isinstance(c, dict)
    }
    chosen = context or doc.get("current-context")
    cluster: Mapping[str, Any] | None = None
    if chosen in contexts:
        cluster = clusters.get(contexts[chosen].get("cluster"))
    elif len(clusters) == 1:
        cluster = next(iter(clusters.values()))
    if not cluster or not cluster.get("server"):
        return None
    ca = cluster.get("certificate-authority-data")
    if ca is None and cluster.get("certificate-authority"):
        path = Path(str(cluster["certificate-authority"]))
        path = path if path.is_absolute() or base is None else base / path
        try:
            ca = base64.b64encode(read_regular(path, MAX_KUBECONFIG_BYTES)).decode()
        except OSError:
            return None
    return Endpoint(
        str(cluster["server"]),
        str(ca) if ca else None,
        bool(cluster.get("insecure-skip-tls-verify", False)),
    )


def scoped_kubeconfig(endpoint: Endpoint, namespace: str, token: str) -> str:
    """A kubeconfig that logs in as the team's ServiceAccount, defaulting to its namespace."""
    cluster: dict[str, Any] = {"server": endpoint.server}
    if endpoint.ca_data:
        cluster["certificate-authority-data"] = endpoint.ca_data
    if endpoint.insecure:
        cluster["insecure-skip-tls-verify"] = True
    name = f"{RUNNER_ACCOUNT}@{namespace}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": "trainstack", "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": "trainstack", "user": name, "namespace": namespace},
            }
        ],
    }
    return yaml.safe_dump(doc, sort_keys=True)


def admin_kubeconfig_text(kubeconfig: str | None) -> tuple[str, Path | None] | None:
    """kubeconfig mode: the admin kubeconfig's text — ``trainstack:kubeconfig`` as contents or a
    path, else ``$KUBECONFIG`` (its first file) or ``~/.kube/config``, as the provider reads it.
    None when there is no such file (an offline plan on a machine without one)."""
    path = admin_kubeconfig_path(kubeconfig)
    if path is None:
        assert kubeconfig is not None
        return kubeconfig, None
    try:
        # Never blocks on a FIFO nor reads a device without end ($KUBECONFIG is not checked
        # by the config loader); a file over the limit is not a kubeconfig.
        raw = read_regular(path, MAX_KUBECONFIG_BYTES)
    except OSError:
        return None
    if len(raw) > MAX_KUBECONFIG_BYTES:
        return None
    return raw.decode("utf-8", errors="replace"), path.parent
