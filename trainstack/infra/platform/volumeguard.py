"""What a team's runner may do with PersistentVolumes: the one source for the admission policy's
CEL (teamaccess.py) and the ``platform-storage`` policy rule (trainstack/policy/rules/storage.py).

PersistentVolumes are cluster-scoped, so a team's cluster-wide right on them (the only one it
holds) is narrowed per team by a ValidatingAdmissionPolicy. A request by team ``T`` (namespace
``N``) passes only when:

- the PV is named ``N.<rest>`` — ``.`` because a namespace is a DNS label and cannot hold one,
  while a PV name is a DNS subdomain: with ``N-`` namespace ``nlp`` could manage
  ``nlp-research``'s PVs (render/storage.py names every PV so);
- on CREATE and UPDATE it is pre-bound to a claim in ``N`` (``spec.claimRef.namespace``): an
  unbound PV can be claimed from any namespace by a PVC that names it (``volumeName``);
- its source is one the platform's runs use, on the team's own data:
  an OSS CSI volume on one of the platform's buckets under the team's prefix ``/T/`` (with the
  team's RAM role on ACK, or an AccessKey Secret in ``N`` in kubeconfig mode), or NFS on the
  platform's NAS under ``/T/``. Any other source — hostPath above all, but also another CSI
  driver, local, iSCSI — is refused; so is a path with a ``..`` segment.

DELETE checks the name only (``object`` is null then: Kubernetes "Validating Admission Policy").
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainstack import platformnames as names

PV_SEPARATOR = names.PV_NAMESPACE_SEPARATOR
OSS_DRIVER = names.OSS_CSI_DRIVER
NAS_DRIVER = names.NAS_CSI_DRIVER
_PARENT = re.compile(r"(^|/)\.\.(/|$)")


def pv_prefix(namespace: str) -> str:
    return f"{namespace}{PV_SEPARATOR}"


def team_prefix(team: str) -> str:
    """The folder of a team's data in every bucket and on the NAS (the artifact store's too:
    ``<store>/<team>/<run>/``, infra/run/artifacts.py)."""
    return f"/{team}/"


def path_in_team(path: str, team: str) -> bool:
    """``path`` (as a PV names it: ``/a/b`` or ``a/b``) lies in the team's folder."""
    if _PARENT.search(path):
        return False
    full = posixpath.normpath("/" + path.lstrip("/")) + "/"
    return full.startswith(team_prefix(team))


@dataclass(frozen=True)
class TeamVolumes:
    """What one team's PVs may point at."""

    team: str
    namespace: str
    buckets: tuple[str, ...] | None  # None: any bucket (kubeconfig mode: the platform owns none)
    nas_servers: tuple[str, ...] | None  # None: any server (kubeconfig mode)
    oss_role: str | None  # ack: the team's RAM role, the only one its OSS PVs may assume


def _cel(value: Any) -> str:
    # JSON string and list literals are valid CEL literals for the plain values used here.
    return json.dumps(value)


def validations(t: TeamVolumes) -> list[dict[str, str]]:
    """The policy's validations, each a CEL expression and the message the API server returns."""
    ns, prefix = t.namespace, team_prefix(t.team)

    def under(path: str) -> str:
        # CEL 1.0 has no let-bindings: the path expression is repeated.
        return (
            f"({path}.startsWith({_cel(prefix)}) || {path} == {_cel(prefix.rstrip('/'))}) "
            f"&& !{path}.matches({_cel(_PARENT.pattern)})"
        )

    oss_attrs = "object.spec.csi.volumeAttributes"
    oss = [
        "has(object.spec.csi.volumeAttributes)",
        f"has({oss_attrs}.bucket)",
        f"has({oss_attrs}.path)",
        under(f"{oss_attrs}.path"),
    ]
    if t.buckets is not None:
        oss.append(f"{oss_attrs}.bucket in {_cel(list(t.buckets))}")
    if t.oss_role is not None:
        oss.append(f"has({oss_attrs}.roleName) && {oss_attrs}.roleName == {_cel(t.oss_role)}")
        oss.append("!has(object.spec.csi.nodePublishSecretRef)")
    else:
        oss.append(
            "!has(object.spec.csi.nodePublishSecretRef) || "
            f"object.spec.csi.nodePublishSecretRef.namespace == {_cel(ns)}"
        )
        oss.append(f"!has({oss_attrs}.roleName)")
    nfs = ["has(object.spec.nfs.path)", under("object.spec.nfs.path")]
    if t.nas_servers is not None:
        nfs.append(f"object.spec.nfs.server in {_cel(list(t.nas_servers))}")
    source = (
        "request.operation == 'DELETE' || "
        f"(has(object.spec.csi) ? (object.spec.csi.driver == {_cel(OSS_DRIVER)} && "
        + " && ".join(f"({c})" for c in oss)
        + ") : has(object.spec.nfs) ? ("
        + " && ".join(f"({c})" for c in nfs)
        + ") : false)"
    )
    where = f"{t.namespace}'s data (/{t.team}/)"
    buckets = f" on {', '.join(t.buckets)}" if t.buckets else ""
    return [
        {
            "expression": "(request.operation == 'DELETE' ? oldObject : object)"
            f".metadata.name.startsWith({_cel(pv_prefix(ns))})",
            "message": f"team namespace {ns} may only create, change or delete "
            f"PersistentVolumes named {pv_prefix(ns)}…",
        },
        {
            "expression": "request.operation == 'DELETE' || (has(object.spec.claimRef) && "
            f"object.spec.claimRef.namespace == {_cel(ns)})",
            "message": f"team namespace {ns} may only create PersistentVolumes pre-bound "
            f"(spec.claimRef) to a claim in {ns}",
        },
        {
            "expression": source,
            "message": f"team namespace {ns} may only create PersistentVolumes on {where}: "
            f"OSS (driver {OSS_DRIVER}{buckets}"
            + (f", role {t.oss_role}" if t.oss_role else "")
            + ") or NFS on the platform's NAS, under /"
            + t.team
            + "/; no hostPath or other source",
        },
    ]


def pv_problem(spec: Mapping[str, Any], t: TeamVolumes) -> tuple[str, str] | None:
    """The same source rule in Python, for the policy rule that checks a plan before it is
    deployed: (field path under ``spec``, what is wrong) or None."""
    csi, nfs = spec.get("csi"), spec.get("nfs")
    if isinstance(csi, Mapping):
        if csi.get("driver") != OSS_DRIVER:
            return "csi.driver", f"driver {csi.get('driver')!r} is not {OSS_DRIVER}"
        attrs = csi.get("volumeAttributes") or {}
        if not path_in_team(str(attrs.get("path", "")), t.team):
            return "csi.volumeAttributes.path", _outside(attrs.get("path"), t)
        if t.buckets is not None and attrs.get("bucket") not in t.buckets:
            known = ", ".join(t.buckets) or "none"
            return (
                "csi.volumeAttributes.bucket",
                f"bucket {attrs.get('bucket')!r} is not one of {known}",
            )
        if t.oss_role is not None and attrs.get("roleName") != t.oss_role:
            return "csi.volumeAttributes.roleName", (
                f"role {attrs.get('roleName')!r} is not team {t.team}'s {t.oss_role!r}"
            )
        return None
    if isinstance(nfs, Mapping):
        if not path_in_team(str(nfs.get("path", "")), t.team):
            return "nfs.path", _outside(nfs.get("path"), t)
        if t.nas_servers is not None and nfs.get("server") not in t.nas_servers:
            return "nfs.server", f"NAS server {nfs.get('server')!r} is not the platform's"
        return None
    kinds = sorted(k for k in spec if k not in _NOT_SOURCES)
    return (kinds[0] if kinds else "csi"), f"a {'/'.join(kinds) or 'missing'} volume source"


def _outside(path: object, t: TeamVolumes) -> str:
    return f"path {path!r} is outside team {t.team}'s folder {team_prefix(t.team)}"


_NOT_SOURCES = frozenset(
    {
        "accessModes",
        "capacity",
        "claimRef",
        "mountOptions",
        "nodeAffinity",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "volumeAttributesClassName",
        "volumeMode",
    }
)


def sorted_or_none(values: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(sorted(set(values)))
