"""Channel bindings → volumes: oss:// and nas:// as static PersistentVolumes (OSS through the
Alibaba OSS CSI driver, NAS as NFS), pvc://claim/sub/path as that claim with a subPath, file://
as hostPath on local clusters only.

`mount` bindings are mounted in place (an output that already holds checkpoints shows them before
the job starts: that is what `preload` needs). `download` bindings and model versions are copied
into an emptyDir by the prepare init container before the command starts.
"""

from __future__ import annotations

import posixpath
import shlex

from trainstack.contract.layout import Layout
from trainstack.contract.names import dns_label
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

OSS_DRIVER = "ossplugin.csi.alibabacloud.com"
OSS_OPTS = "-o max_stat_cache_size=0 -o allow_other"
NAS_MOUNT_OPTIONS = ["nolock", "tcp", "noresvport", "vers=3"]


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
                    hint="render with --local-cluster for kind/minikube, or upload the data and "
                    "bind oss://, nas:// or pvc://",
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
        pv = dns_label(f"{self.ns}-{self.job}-{vol}")
        claim = dns_label(f"{self.job}-{vol}")
        mode = "ReadOnlyMany" if read_only else "ReadWriteMany"
        path = source_dir.rstrip("/") or "/"
        if b.scheme is Scheme.OSS:
            volume = PersistentVolume(
                pv,
                {**self.labels, "alicloud-pvname": pv},
                mode,
                csi=self._oss_csi(b, pv, path, read_only),
            )
        else:  # nas
            volume = PersistentVolume(
                pv,
                dict(self.labels),
                mode,
                nfs={"server": b.location, "path": path, "readOnly": read_only},
                mount_options=list(NAS_MOUNT_OPTIONS),
            )
        return PodParts(
            volumes_beside=(volume,),
            claims=(Claim(claim, self.ns, dict(self.labels), mode, pv),),
            volumes=(
                {"name": vol, "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}},
            ),
        ), None

    def _oss_csi(self, b: Binding, pv: str, path: str, read_only: bool) -> dict[str, object]:
        bucket, _, endpoint = b.location.partition(".")
        attrs: dict[str, str] = {
            "bucket": bucket,
            "url": endpoint or self.options.oss_endpoint,
            "path": path,
            "otherOpts": OSS_OPTS + (" -o ro" if read_only else ""),
        }
        csi: dict[str, object] = {
            "driver": OSS_DRIVER,
            "volumeHandle": pv,
            "volumeAttributes": attrs,
        }
        if self.options.oss_ram_role:
            # RRSA: the CSI driver's ossfs pods assume the role with their service-account
            # token; no credential on the node, in a Secret or in this manifest.
            attrs["authType"] = "rrsa"
            attrs["roleName"] = self.options.oss_ram_role
        elif self.options.oss_secret:
            # The Secret holds akId/akSecret; the manifest names it, never its content.
            csi["nodePublishSecretRef"] = {"name": self.options.oss_secret, "namespace": self.ns}
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
