"""What a team's runner may do with PersistentVolumes: the one source for the admission policy's
CEL (volumepolicy.py) and the ``platform-storage`` policy rule (trainstack/policy/rules/storage.py).

PersistentVolumes are cluster-scoped, so a team's cluster-wide right on them (the only one it
holds) is narrowed per team by a ValidatingAdmissionPolicy. A request by team ``T`` (namespace
``N``) passes only when:

- the PV is named ``N.<rest>`` — ``.`` because a namespace is a DNS label and cannot hold one,
  while a PV name is a DNS subdomain: with ``N-`` namespace ``nlp`` could manage
  ``nlp-research``'s PVs (render/storage.py names every PV so);
- on CREATE and UPDATE it is pre-bound to a claim in ``N`` (``spec.claimRef``): an unbound PV can
  be claimed from any namespace by a PVC that names it (``volumeName``);
- its source has exactly the shape the renderer writes (render/storage.py), on the team's own
  data: an OSS CSI volume with exactly the renderer's ``volumeAttributes`` keys, on one of the
  platform's buckets under ``/T/``, at the environment's OSS endpoint, with the renderer's
  ``otherOpts``, with the team's RAM role on ACK and no secret reference, or with the team's own
  AccessKey Secret in ``N`` in kubeconfig mode; or NFS on the platform's NAS under ``/T/`` with
  the renderer's mount options. Anything else is refused.

The allow-list is of exact keys because the Alibaba Cloud CSI driver reads the attributes more
loosely than a deny-list could follow (kubernetes-sigs/alibaba-cloud-csi-driver, read at
8aacf90): it trims and lower-cases every key, so ``Path`` and ``PATH`` set the path and Go's map
order picks among duplicates (pkg/oss/utils.go:177 and :356), and trims every value
(utils.go:178, :357); ``ramRole`` is ``roleName`` (utils.go:205); ``roleArn`` with
``oidcProviderArn`` replaces ``roleName`` (pkg/mounter/fuse_pod_manager/oss/utils.go:59 and :80);
``secretRef`` names a Secret for the fuse pod (utils.go:195); ``otherOpts`` and the PV's
``mountOptions`` become ossfs options (utils.go:662-672) and ``fsType`` the fuse type
(utils.go:281); credentials come from whatever Secret a ``*SecretRef`` of the PV names, in any
namespace (``req.GetSecrets()``: pkg/oss/controllerserver.go:168, pkg/oss/nodeserver.go:131); and
with no auth type, role or secret it mounts with its own AccessKey (utils.go:310-318).

Values known only once the platform exists (its buckets, NAS, the team's role, the OSS endpoint)
are not in the expressions: they are the policy's parameters, a ConfigMap per team
(``params_data``), so ``trainstack plan`` shows every expression in full.

DELETE checks the name only (``object`` is null then: Kubernetes "Validating Admission Policy").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainstack import platformnames as names
from trainstack.render.storage import (
    NAS_MOUNT_OPTIONS,
    OSS_ATTRIBUTES,
    OSS_AUTH_TYPE_RRSA,
    OSS_OTHER_OPTS,
    OSS_RRSA_ATTRIBUTES,
    OSS_SECRET_REF,
)

PV_SEPARATOR = names.PV_NAMESPACE_SEPARATOR
OSS_DRIVER = names.OSS_CSI_DRIVER
NAS_DRIVER = names.NAS_CSI_DRIVER
_PARENT = re.compile(r"(^|/)\.\.(/|$)")
# Every character Python's str.isspace() knows, a superset of Go's unicode.IsSpace, which the
# driver's strings.TrimSpace strips from values: `/nlp/.. ` would pass the `..` check and then
# mount `/`.
SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_EDGE_SPACE = re.compile(f"^[{SPACES}]|[{SPACES}]$")

CSI_NOT_RENDERED = (
    "readOnly",
    "fsType",
    "controllerPublishSecretRef",
    "nodeStageSecretRef",
    "nodePublishSecretRef",
    "controllerExpandSecretRef",
    "nodeExpandSecretRef",
)
"""The CSIPersistentVolumeSource fields (Kubernetes 1.30) the renderer never writes, save the one
secret reference of kubeconfig mode (OSS_SECRET_REF)."""
SPEC_NOT_RENDERED = ("nodeAffinity",)
"""PersistentVolumeSpec fields, other than sources, the renderer never writes."""
FILESYSTEM = "Filesystem"  # the API server's default volumeMode, and the renderer's

# The parameter ConfigMap's keys: one value per key, and each allowed bucket or NAS server a key
# of its own (CEL's `in` on a map), as Kubernetes' CEL has no string split.
PARAM_ENDPOINT = "ossEndpoint"
PARAM_ROLE = "roleName"
PARAM_BUCKET = "bucket."
PARAM_NAS = "nasServer."
_PARAMS = "params.data"


def pv_prefix(namespace: str) -> str:
    return f"{namespace}{PV_SEPARATOR}"


def team_prefix(team: str) -> str:
    """The folder of a team's data in every bucket and on the NAS (the artifact store's too:
    ``<store>/<team>/<run>/``, infra/run/artifacts.py)."""
    return f"/{team}/"


def path_in_team(path: str, team: str) -> bool:
    """``path`` (as a PV names it: ``/team`` or ``/team/…``) lies in the team's folder, with no
    ``..`` segment and nothing the driver would trim off either end."""
    if _PARENT.search(path) or _EDGE_SPACE.search(path):
        return False
    return path == team_prefix(team).rstrip("/") or path.startswith(team_prefix(team))


@dataclass(frozen=True)
class GuardShape:
    """What a team's policy expressions are built from: all known when the platform is planned."""

    team: str
    namespace: str
    pinned: bool  # ack: NAS servers only the platform's (kubeconfig mode owns none)
    rrsa: bool  # OSS PVs mount with the team's RAM role (ack)
    oss_secret: str | None  # kubeconfig mode: the team's AccessKey Secret OSS PVs name; None: none
    # buckets only the platform's: ack's, or in kubeconfig mode those trainstack:ossBuckets names
    pinned_buckets: bool = False

    @classmethod
    def of(
        cls,
        team: str,
        namespace: str,
        ack: bool,
        oss_secret: str | None,
        named_buckets: bool = False,
    ) -> GuardShape:
        """ack pins the platform's storage and mounts OSS with the team's role; kubeconfig mode
        mounts it with the team's own AccessKey Secret, if it has one, and pins the buckets the
        environment names (``named_buckets``), the only ones that key's policy reaches."""
        return cls(team, namespace, ack, ack, None if ack else oss_secret, ack or named_buckets)


@dataclass(frozen=True)
class TeamVolumes:
    """What one team's PVs may point at: the shape, and the values its parameters hold."""

    shape: GuardShape
    buckets: tuple[str, ...] | None  # None: any bucket (or not known yet, for the policy rule)
    nas_servers: tuple[str, ...] | None  # None: any server (or not known yet)
    oss_role: str | None  # ack: the team's RAM role, the only one its OSS PVs may name
    oss_endpoint: str | None  # the OSS endpoint every OSS PV names; None: not known yet

    @property
    def team(self) -> str:
        return self.shape.team


def params_data(t: TeamVolumes) -> dict[str, str]:
    """The team's parameter ConfigMap's ``data``: what its policy's expressions read."""
    data = {PARAM_ENDPOINT: t.oss_endpoint or ""}
    if t.oss_role is not None:
        data[PARAM_ROLE] = t.oss_role
    data |= {f"{PARAM_BUCKET}{b}": b for b in t.buckets or ()}
    data |= {f"{PARAM_NAS}{s}": s for s in t.nas_servers or ()}
    return data


def _cel(value: Any) -> str:
    # JSON string and list literals are valid CEL literals for the plain values used here (a
    # non-ASCII character as a \\u escape, which CEL reads the same).
    return json.dumps(value)


def _under(path: str, team: str) -> str:
    """CEL: ``path`` is in the team's folder (path_in_team); CEL 1.0 has no let-bindings."""
    prefix = team_prefix(team)
    return (
        f"({path} == {_cel(prefix.rstrip('/'))} || {path}.startsWith({_cel(prefix)})) "
        f"&& !{path}.matches({_cel(_PARENT.pattern)}) "
        f"&& !{path}.matches({_cel(_EDGE_SPACE.pattern)})"
    )


def oss_keys(s: GuardShape) -> tuple[str, ...]:
    """The volumeAttributes keys a team's OSS PVs hold: all of them, and no other."""
    return OSS_ATTRIBUTES + (OSS_RRSA_ATTRIBUTES if s.rrsa else ())


def _oss_rules(s: GuardShape) -> list[str]:
    if not s.rrsa and s.oss_secret is None:
        return ["false"]  # no credentials: the driver would mount with its own AccessKey
    csi, attrs = "object.spec.csi", "object.spec.csi.volumeAttributes"
    keys = oss_keys(s)
    rules = [
        f"{csi}.driver == {_cel(OSS_DRIVER)}",
        # the driver keys what it mounts by volume id: another PV's would share its mount
        f"{csi}.volumeHandle == object.metadata.name",
        *(f"!has({csi}.{f})" for f in CSI_NOT_RENDERED if s.rrsa or f != OSS_SECRET_REF),
        "!has(object.spec.mountOptions)",
        f"has({attrs})",
        f"{attrs}.all(k, k in {_cel(list(keys))})",
        *(f"has({attrs}.{k})" for k in keys),
        f"{attrs}.url == {_PARAMS}.{PARAM_ENDPOINT}",
        f"{attrs}.otherOpts in {_cel(list(OSS_OTHER_OPTS))}",
        _under(f"{attrs}.path", s.team),
    ]
    if s.pinned_buckets:
        rules.append(f"({_cel(PARAM_BUCKET)} + {attrs}.bucket) in {_PARAMS}")
    if s.rrsa:
        rules.append(f"{attrs}.authType == {_cel(OSS_AUTH_TYPE_RRSA)}")
        rules.append(f"{attrs}.roleName == {_PARAMS}.{PARAM_ROLE}")
    else:
        ref = f"{csi}.{OSS_SECRET_REF}"
        rules.append(
            f"has({ref}) && {ref}.name == {_cel(s.oss_secret)} "
            f"&& {ref}.namespace == {_cel(s.namespace)}"
        )
    return rules


def _nfs_rules(s: GuardShape) -> list[str]:
    nfs = "object.spec.nfs"
    rules = [
        f"has({nfs}.path)",
        _under(f"{nfs}.path", s.team),
        "!has(object.spec.mountOptions) || "
        f"object.spec.mountOptions.all(o, o in {_cel(NAS_MOUNT_OPTIONS)})",
    ]
    if s.pinned:
        rules.append(f"({_cel(PARAM_NAS)} + {nfs}.server) in {_PARAMS}")
    return rules


def _all(rules: Sequence[str]) -> str:
    return " && ".join(f"({r})" for r in rules)


def validations(s: GuardShape) -> list[dict[str, str]]:
    """The policy's validations, each a CEL expression and the message the API server returns."""
    ns, team = s.namespace, s.team
    write = "request.operation == 'DELETE' || "
    spec_rules = [
        f"has(object.spec.csi) ? object.spec.csi.driver == {_cel(OSS_DRIVER)} "
        ": has(object.spec.nfs)",
        *(f"!has(object.spec.{f})" for f in SPEC_NOT_RENDERED),
        f"!has(object.spec.volumeMode) || object.spec.volumeMode == {_cel(FILESYSTEM)}",
    ]
    auth = (
        "the team's RAM role (authType rrsa, roleName), no secret reference"
        if s.rrsa
        else f"{OSS_SECRET_REF} {s.oss_secret} in {ns}"
        if s.oss_secret
        else f"none: team {team} has no OSS AccessKey"
    )
    return [
        {
            "expression": "(request.operation == 'DELETE' ? oldObject : object)"
            f".metadata.name.startsWith({_cel(pv_prefix(ns))})",
            "message": f"team namespace {ns} may only create, change or delete "
            f"PersistentVolumes named {pv_prefix(ns)}…",
        },
        {
            "expression": write + "(has(object.spec.claimRef) && "
            f"object.spec.claimRef.namespace == {_cel(ns)})",
            "message": f"team namespace {ns} may only create PersistentVolumes pre-bound "
            f"(spec.claimRef) to a claim in {ns}",
        },
        {
            "expression": write + _all(spec_rules),
            "message": f"team namespace {ns} may only create PersistentVolumes on OSS (driver "
            f"{OSS_DRIVER}) or NFS, volumeMode {FILESYSTEM}, without "
            + ", ".join(SPEC_NOT_RENDERED)
            + ": no hostPath or other source",
        },
        {
            "expression": write + "!has(object.spec.csi) || " + _all(_oss_rules(s)),
            "message": f"an OSS PersistentVolume of team namespace {ns} has exactly the "
            f"volumeAttributes {', '.join(oss_keys(s))} (no other key, in no other case), "
            f"bucket one of the platform's, url the platform's OSS endpoint, path under "
            f"/{team}/, otherOpts one of {' | '.join(OSS_OTHER_OPTS)}, volumeHandle its own "
            f"name, no mountOptions or fsType; credentials: {auth}",
        },
        {
            "expression": write + "!has(object.spec.nfs) || " + _all(_nfs_rules(s)),
            "message": f"an NFS PersistentVolume of team namespace {ns} is on the platform's NAS, "
            f"under /{team}/, with mountOptions only among {', '.join(NAS_MOUNT_OPTIONS)}",
        },
    ]


def pv_problem(
    spec: Mapping[str, Any], t: TeamVolumes, name: str | None = None
) -> tuple[str, str] | None:
    """The same rule in Python, for the policy rule that checks a plan before it is deployed:
    (field path under ``spec``, what is wrong) or None. A value ``t`` leaves unknown (None) is
    not checked; ``name`` is the PV's, which its ``volumeHandle`` must be."""
    for field in SPEC_NOT_RENDERED:
        if field in spec:
            return field, f"{field} is not part of a volume trainstack renders"
    if spec.get("volumeMode", FILESYSTEM) != FILESYSTEM:
        return "volumeMode", f"volumeMode {spec.get('volumeMode')!r} is not {FILESYSTEM}"
    csi, nfs = spec.get("csi"), spec.get("nfs")
    if isinstance(csi, Mapping):
        return _oss_problem(spec, csi, t, name)
    if isinstance(nfs, Mapping):
        return _nfs_problem(spec, nfs, t)
    kinds = sorted(k for k in spec if k not in _NOT_SOURCES)
    return (kinds[0] if kinds else "csi"), f"a {'/'.join(kinds) or 'missing'} volume source"


def _oss_problem(
    spec: Mapping[str, Any], csi: Mapping[str, Any], t: TeamVolumes, name: str | None
) -> tuple[str, str] | None:
    s = t.shape
    if csi.get("driver") != OSS_DRIVER:
        return "csi.driver", f"driver {csi.get('driver')!r} is not {OSS_DRIVER}"
    if not s.rrsa and s.oss_secret is None:
        return "csi", f"team {t.team} has no OSS AccessKey for a PersistentVolume to name"
    if name is not None and csi.get("volumeHandle") != name:
        return "csi.volumeHandle", f"volumeHandle {csi.get('volumeHandle')!r} is not {name!r}"
    for field in CSI_NOT_RENDERED:
        if field in csi and (s.rrsa or field != OSS_SECRET_REF):
            return f"csi.{field}", f"{field} is not part of a volume trainstack renders"
    if "mountOptions" in spec:
        return "mountOptions", "an OSS volume's mountOptions become ossfs options"
    attrs = csi.get("volumeAttributes") or {}
    keys = oss_keys(s)
    odd = sorted(set(attrs) ^ set(keys))
    if odd:
        what = "is not one trainstack renders" if odd[0] in attrs else "is missing"
        return f"csi.volumeAttributes.{odd[0]}", f"volume attribute {odd[0]!r} {what}"
    if not path_in_team(str(attrs["path"]), t.team):
        return "csi.volumeAttributes.path", _outside(attrs["path"], t)
    pinned = _oss_value_problem(attrs, t)
    if pinned is not None:
        return pinned
    if not s.rrsa:
        ref = csi.get(OSS_SECRET_REF)
        wanted = {"name": s.oss_secret, "namespace": s.namespace}
        if not isinstance(ref, Mapping) or dict(ref) != wanted:
            return f"csi.{OSS_SECRET_REF}", f"{OSS_SECRET_REF} {ref!r} is not {wanted!r}"
    return None


def _oss_value_problem(attrs: Mapping[str, Any], t: TeamVolumes) -> tuple[str, str] | None:
    checks: list[tuple[str, Any, Sequence[Any] | None]] = [
        ("url", attrs["url"], None if t.oss_endpoint is None else [t.oss_endpoint]),
        ("otherOpts", attrs["otherOpts"], OSS_OTHER_OPTS),
        ("bucket", attrs["bucket"], t.buckets if t.shape.pinned_buckets else None),
    ]
    if t.shape.rrsa:
        checks.append(("authType", attrs["authType"], [OSS_AUTH_TYPE_RRSA]))
        checks.append(("roleName", attrs["roleName"], None if t.oss_role is None else [t.oss_role]))
    for key, value, allowed in checks:
        if allowed is not None and value not in allowed:
            known = ", ".join(repr(a) for a in allowed) or "none"
            return f"csi.volumeAttributes.{key}", f"{key} {value!r} is not one of {known}"
    return None


def _nfs_problem(
    spec: Mapping[str, Any], nfs: Mapping[str, Any], t: TeamVolumes
) -> tuple[str, str] | None:
    if not path_in_team(str(nfs.get("path", "")), t.team):
        return "nfs.path", _outside(nfs.get("path"), t)
    if t.shape.pinned and t.nas_servers is not None and nfs.get("server") not in t.nas_servers:
        return "nfs.server", f"NAS server {nfs.get('server')!r} is not the platform's"
    extra = [o for o in spec.get("mountOptions") or () if o not in NAS_MOUNT_OPTIONS]
    if extra:
        return "mountOptions", f"mount options {extra!r} are not among {NAS_MOUNT_OPTIONS!r}"
    return None


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
