"""Channel bindings → volumes: oss:// and nas:// as static PersistentVolumes (OSS through the
Alibaba OSS CSI driver, NAS as NFS), pvc://claim/sub/path as that claim with a subPath, file://
as hostPath on local clusters only.

A static PV and its claim are named after what is immutable about them (`volume_names`): a PV's
source is immutable after creation ("spec.persistentvolumesource is immutable after creation",
Kubernetes API validation), so a changed binding must be a new PV and a new claim, created
before the job that mounts them while the old pair is deleted after it (docs/deploy.md,
"Redeploys"). Each PV is pre-bound to its claim (`claimRef`) and the claim names its PV
(`volumeName`), so neither can bind to anything else.

`mount` bindings are mounted in place (an output that already holds checkpoints shows them before
the job starts: that is what `preload` needs). `download` bindings and model versions are copied
into an emptyDir by the prepare init container before the command starts.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
from collections.abc import Mapping
from typing import Any

from trainstack.contract.layout import Layout
from trainstack.k8snames import dns_label
from trainstack.platformnames import MAX_DNS_LABEL, OSS_CSI_DRIVER, pv_name
from trainstack.render.meta import fixed_labels
from trainstack.render.options import RenderError, RenderOptions
from trainstack.render.parts import (
    STAGING,
    Claim,
    Mount,
    PersistentVolume,
    PodParts,
    combine,
)
from trainstack.spec.model import Binding, BindingMode, Run, Scheme

OSS_DRIVER = OSS_CSI_DRIVER
OSS_OPTS = "-o max_stat_cache_size=0 -o allow_other"
OSS_READ_ONLY_OPT = "-o ro"
NAS_MOUNT_OPTIONS = ["nolock", "tcp", "noresvport", "vers=3"]

# What an OSS PV's CSI source holds, written only through these names: the volume admission
# policy and the platform-storage rule admit exactly these keys and values
# (infra/platform/volumeguard.py), so a key the renderer starts writing is one the guard knows.
OSS_ATTRIBUTES = ("bucket", "url", "path", "otherOpts")
"""The volumeAttributes of every OSS PV, in the order `_oss_csi` fills them."""
OSS_RRSA_ATTRIBUTES = ("authType", "roleName")
"""The volumeAttributes an OSS PV adds when it mounts with a RAM role (RRSA)."""
OSS_AUTH_TYPE_RRSA = "rrsa"
OSS_SECRET_REF = "nodePublishSecretRef"
"""The one secret reference an OSS PV names (kubeconfig mode's AccessKey Secret)."""


def oss_other_opts(read_only: bool) -> str:
    """The ossfs options of an OSS PV (its ``otherOpts``)."""
    return f"{OSS_OPTS} {OSS_READ_ONLY_OPT}" if read_only else OSS_OPTS


OSS_OTHER_OPTS = tuple(oss_other_opts(read_only) for read_only in (False, True))
"""Every ``otherOpts`` value the renderer writes."""


# Node paths a hostPath must never be: the root (a writable `/` is the whole node), and system
# folders whose content is the node's own credentials, devices, runtime sockets or binaries.
_HOST_SYSTEM = (
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
    "/run",
    "/var/run",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/usr",
    "/var/lib/kubelet",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/etcd",
    "/var/log",
)
_HOST_PARENTS = ("/", "/var", "/var/lib", "/home", "/mnt", "/opt", "/srv", "/tmp")


def dangerous_host_path(path: str) -> str | None:
    """Why the normalised absolute `path` must not be a hostPath volume, or None."""
    if path == "/":
        return "the node's root file system"
    for system in _HOST_SYSTEM:
        if path == system or path.startswith(system + "/"):
            return f"under the system folder {system}"
    if path in _HOST_PARENTS:
        return "a top-level folder shared by everything on the node"
    return None


def _sha8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def volume_digest(identity: Mapping[str, Any]) -> str:
    """8 hex characters of sha256 over the canonical JSON of everything immutable about a volume
    (its scheme, source, access mode, driver attributes and credentials' names)."""
    return _sha8(json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=True))


def volume_names(namespace: str, job: str, vol: str, digest: str) -> tuple[str, str]:
    """(PV name, claim name) for volume `vol` of `job`: the claim `<job>-<vol>-<digest>` (a DNS
    label; `<job>-<vol>` shortened with a digest of itself when the whole would pass 63), the
    PV `<namespace>.<claim>` (trainstack.platformnames.pv_name)."""
    base, room = f"{job}-{vol}", MAX_DNS_LABEL - len(digest) - 1
    if len(base) > room:
        base = base[: room - 9].rstrip("-") + "-" + _sha8(base)
    claim = f"{base}-{digest}"
    return pv_name(namespace, claim), claim


def label_value(name: str) -> str:
    """`name` as a label value (at most 63 characters, alphanumeric at both ends): a longer one
    is cut and ends in a digest of the whole, so distinct names stay distinct."""
    if len(name) <= MAX_DNS_LABEL:
        return name
    return name[: MAX_DNS_LABEL - 9].rstrip("-.") + "-" + _sha8(name)


class Storage:
    def __init__(
        self, run: Run, job: str, namespace: str, labels: dict[str, str], options: RenderOptions
    ) -> None:
        self.run, self.job, self.ns, self.labels = run, job, namespace, labels
        self.options = options

    def plan(self) -> PodParts:
        """The run's inputs, outputs and models, in that order."""
        lay = Layout.at()
        parts = [
            self.attach(
                b,
                dns_label(name, prefix="in-"),
                lay.input_dir(name),
                read_only=True,
                download=b.mode is BindingMode.DOWNLOAD,
            )
            for name, b in self.run.inputs.items()
        ]
        parts += [
            self.attach(
                b,
                dns_label(name, prefix="out-"),
                lay.output_dir(name),
                read_only=False,
                download=False,
            )
            for name, b in self.run.outputs.items()
        ]
        parts += [
            self.attach(
                m.binding,
                dns_label(m.name, prefix="model-"),
                lay.model_dir(m.name),
                read_only=True,
                download=True,
            )
            for m in self.run.models
        ]
        return combine(parts)

    def attach(
        self,
        b: Binding,
        vol: str,
        target: str,
        *,
        read_only: bool,
        download: bool,
        writable_copy: bool = False,
    ) -> PodParts:
        """What makes `b` appear at directory `target` (the file inside it, for file bindings).
        A downloaded copy is read-only like the source unless `writable_copy` (code)."""
        source_dir = b.path.rsplit("/", 1)[0] + "/" if b.is_file else b.path
        volume, sub_path = self._volume(b, vol, source_dir, read_only or download)
        if not download:
            return volume + PodParts(mounts=(Mount(vol, target, read_only, sub_path),))
        # "copy-" starts no other volume's name (those start in-, out-, model- or are fixed
        # words), so a copy never collides with a channel's volume: input `data` in download mode
        # and an input named `data-copy` used to give two volumes `in-data-copy`.
        copy = dns_label(vol, prefix="copy-")
        staged = f"{STAGING}/{vol}"
        if b.filename:
            step = f"cp -- {shlex.quote(staged + '/' + b.filename)} {shlex.quote(target)}"
        else:
            step = f"cp -R -- {shlex.quote(staged + '/.')} {shlex.quote(target)}"
        return volume + PodParts(
            volumes=({"name": copy, "emptyDir": {}},),
            mounts=(Mount(copy, target, read_only and not writable_copy),),
            stage_mounts=(Mount(vol, staged, True, sub_path), Mount(copy, target)),
            stage_steps=(step,),
        )

    def _volume(
        self, b: Binding, vol: str, source_dir: str, read_only: bool
    ) -> tuple[PodParts, str | None]:
        """The pod volume for `b` (and what it needs beside the job), and the subPath to mount
        it with."""
        if b.scheme is Scheme.PVC:
            return PodParts(
                volumes=(
                    {
                        "name": vol,
                        "persistentVolumeClaim": {"claimName": b.location, "readOnly": read_only},
                    },
                )
            ), (source_dir.strip("/") or None)
        if b.scheme is Scheme.FILE:
            if not self.options.local_cluster:
                raise RenderError(
                    f"run {self.run.name!r}: {b.uri} is a file:// binding, which only a local "
                    "cluster can mount (as a hostPath)",
                    hint="upload the data and bind oss://, nas:// or pvc://; file:// is for one "
                    "user's kind or minikube (an environment with trainstack:hostPathVolumes: "
                    "true, or `trainstack render --local-cluster`)",
                )
            # One leading slash: POSIX keeps `//etc` as is, and it must not slip past the check.
            host = (
                posixpath.normpath("/" + source_dir.strip("/"))
                if source_dir.startswith("/")
                else source_dir.rstrip("/")
            )
            danger = dangerous_host_path(host)
            if danger:
                raise RenderError(
                    f"run {self.run.name!r}: {b.uri} would mount the node's {host} ({danger}) "
                    "into the pod" + ("" if read_only else ", writable"),
                    hint="bind a directory of its own, e.g. file:///data/<run>/",
                )
            return PodParts(
                volumes=(
                    {
                        "name": vol,
                        "hostPath": {
                            "path": host,
                            "type": "Directory" if read_only else "DirectoryOrCreate",
                        },
                    },
                )
            ), None
        mode = "ReadOnlyMany" if read_only else "ReadWriteMany"
        path = source_dir.rstrip("/") or "/"
        source: dict[str, Any]
        if b.scheme is Scheme.OSS:
            source = {"csi": self._oss_csi(b, path, read_only)}
        else:  # nas
            source = {
                "nfs": {"server": b.location, "path": path, "readOnly": read_only},
                "mountOptions": list(NAS_MOUNT_OPTIONS),
            }
        digest = volume_digest({"scheme": b.scheme.value, "accessMode": mode, **source})
        pv, claim = volume_names(self.ns, self.job, vol, digest)
        claim_ref = {"namespace": self.ns, "name": claim}
        # Only labels that change with the name: the pair is then never updated in place, only
        # created and deleted (fixed_labels says why an update would fail).
        labels = fixed_labels(self.labels)
        if b.scheme is Scheme.OSS:
            # The OSS CSI driver wants a volumeHandle unique per PV: the PV's own name. The
            # alicloud-pvname label is Alibaba's convention for finding a static PV (a PVC
            # selector in its examples); binding here goes by claimRef and volumeName, so a name
            # longer than a label value's 63 characters is carried shortened (label_value).
            csi = {**source["csi"], "volumeHandle": pv}
            volume = PersistentVolume(
                pv,
                {**labels, "alicloud-pvname": label_value(pv)},
                mode,
                csi=csi,
                claim_ref=claim_ref,
            )
        else:
            volume = PersistentVolume(
                pv,
                dict(labels),
                mode,
                nfs=source["nfs"],
                mount_options=source["mountOptions"],
                claim_ref=claim_ref,
            )
        return PodParts(
            volumes_beside=(volume,),
            claims=(Claim(claim, self.ns, dict(labels), mode, pv),),
            volumes=(
                {"name": vol, "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}},
            ),
        ), None

    def _oss_csi(self, b: Binding, path: str, read_only: bool) -> dict[str, object]:
        """The CSI source of an oss:// binding, without its volumeHandle (the PV's name, which
        is derived from this)."""
        bucket, _, endpoint = b.location.partition(".")
        values = (bucket, endpoint or self.options.oss_endpoint, path, oss_other_opts(read_only))
        attrs = dict(zip(OSS_ATTRIBUTES, values, strict=True))
        csi: dict[str, object] = {"driver": OSS_DRIVER, "volumeAttributes": attrs}
        if self.options.oss_ram_role:
            # RRSA: the CSI driver's ossfs pods assume the role with their service-account
            # token; no credential on the node, in a Secret or in this manifest.
            rrsa = (OSS_AUTH_TYPE_RRSA, self.options.oss_ram_role)
            attrs.update(zip(OSS_RRSA_ATTRIBUTES, rrsa, strict=True))
        elif self.options.oss_secret:
            # The Secret holds akId/akSecret; the manifest names it, never its content.
            csi[OSS_SECRET_REF] = {"name": self.options.oss_secret, "namespace": self.ns}
        else:
            raise RenderError(
                f"run {self.run.name!r}: {b.uri} needs OSS credentials for the CSI driver",
                hint=self.options.oss_credentials_hint
                or "set --oss-secret NAME (a Secret with "
                "akId and akSecret) or --oss-role NAME (a RAM role, assumed through RRSA)",
            )
        return csi


def check_unique_names(run: Run, parts: PodParts) -> None:
    """A last guard before output: two volumes, PersistentVolumes or claims with one name would
    make the API server reject the job (or bind one run's data to another's claim)."""
    for what, names in (
        ("volume", [v["name"] for v in parts.volumes]),
        ("PersistentVolume", [v.name for v in parts.volumes_beside]),
        ("PersistentVolumeClaim", [c.name for c in parts.claims]),
    ):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise RenderError(
                    f"run {run.name!r}: two {what}s would be named {name!r}",
                    hint="rename one of the channels or models they come from",
                )
            seen.add(name)
