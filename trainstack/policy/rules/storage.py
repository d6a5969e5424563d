"""platform-storage: OSS and NAS volumes bind only the platform's buckets and file systems, the
ones its RAM roles can read (a foreign bucket mounts, then fails with 403 inside the job); and a
team's PersistentVolumes only its own folder of them, with exactly the shape the renderer writes
(its volume attribute keys, endpoint, options and credentials) — the rule the cluster's volume
admission policy enforces, from the same source (infra/platform/volumeguard.py), so a plan fails
here before `pulumi up` is refused there."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack import platformnames as names
from trainstack.infra.platform.volumeguard import (
    PV_SEPARATOR,
    GuardShape,
    TeamVolumes,
    pv_problem,
)
from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import pod_templates

OSS_DRIVER = names.OSS_CSI_DRIVER
NAS_DRIVER = names.NAS_CSI_DRIVER


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


def _team_volume(resource: Resource, ctx: Context) -> Iterator[Finding]:
    """A PV of a team namespace (by its claim, else its name) against that team's guard."""
    if resource.type != "kubernetes:core/v1:PersistentVolume":
        return
    spec = resource.props.get("spec")
    meta = resource.props.get("metadata")
    if not isinstance(spec, Mapping):
        return
    claim = spec.get("claimRef")
    namespace = claim.get("namespace") if isinstance(claim, Mapping) else None
    if namespace is None and isinstance(meta, Mapping):
        namespace = str(meta.get("name", "")).partition(PV_SEPARATOR)[0]
    team = ctx.team_of(namespace)
    if team is None:
        return
    ack = ctx.mode == "ack"
    shape = GuardShape.of(team, str(namespace), ack, ctx.oss_secret_of(team))
    # the platform's buckets and NAS are checked below, with their own settings
    guard = TeamVolumes(
        shape, None, None, ctx.team_roles.get(team) if ack else None, ctx.oss_endpoint
    )
    name = meta.get("name") if isinstance(meta, Mapping) else None
    problem = pv_problem(spec, guard, None if name is None else str(name))
    if problem is not None:
        where, what = problem
        yield Finding(
            f"spec.{where}",
            what,
            f"bind data under /{team}/ of the platform's storage (oss://<bucket>/{team}/…, "
            f"nas://<server>/{team}/…) and keep the PersistentVolume as trainstack renders it: "
            f"team {team}'s volumes may reach nothing else",
        )


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    yield from _team_volume(resource, ctx)
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
