"""platform-storage: OSS and NAS volumes bind only the platform's buckets and file systems, the
ones its jobs role can read (a foreign bucket mounts, then fails with 403 inside the job)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import pod_templates

OSS_DRIVER = "ossplugin.csi.alibabacloud.com"
NAS_DRIVER = "nasplugin.csi.alibabacloud.com"


def _csi_volumes(resource: Resource) -> Iterator[tuple[str, Mapping[str, Any]]]:
    spec = resource.props.get("spec")
    if resource.type == "kubernetes:core/v1:PersistentVolume" and isinstance(spec, Mapping):
        csi = spec.get("csi")
        if isinstance(csi, Mapping):
            yield "spec.csi", csi
    for pod in pod_templates(resource.props):
        for i, vol in enumerate(pod.spec.get("volumes") or ()):
            if isinstance(vol, Mapping) and isinstance(vol.get("csi"), Mapping):
                yield f"{pod.path}.volumes[{i}].csi", vol["csi"]


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    buckets = set(ctx.buckets) | set(config.get("buckets") or ())
    servers = set(config.get("nasServers") or ())
    nas_known = ctx.nas_server is not None
    if ctx.nas_server:
        servers.add(ctx.nas_server)
    for path, csi in _csi_volumes(resource):
        attrs = csi.get("volumeAttributes") or {}
        if csi.get("driver") == OSS_DRIVER:
            bucket = str(attrs.get("bucket", ""))
            if bucket not in buckets:
                yield Finding(
                    f"{path}.volumeAttributes.bucket",
                    f"bucket {bucket!r} is not one of the platform's buckets "
                    f"({', '.join(sorted(buckets)) or 'none'})",
                    "bind a bucket the platform created (its jobs role can read only "
                    "those), or add it to policy:rules.platform-storage.buckets",
                )
        elif csi.get("driver") == NAS_DRIVER and (nas_known or servers):
            server = str(attrs.get("server", "")).split(":")[0]
            if server not in servers:
                yield Finding(
                    f"{path}.volumeAttributes.server",
                    f"NAS server {server!r} is not the platform's file system",
                    "bind nas:// paths on the platform's NAS (output nasServer), or "
                    "add the server to policy:rules.platform-storage.nasServers",
                )


RULE = Rule(
    id="platform-storage",
    description="OSS and NAS bindings only to the platform's buckets and file systems.",
    level=Level.MANDATORY,
    defaults={"buckets": [], "nasServers": []},
    check=check,
    types=("kubernetes:",),
)
