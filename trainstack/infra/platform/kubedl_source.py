"""An operator's CRDs from a pinned, checksum-verified folder — never from the internet at preview.

KubeDL's by default; Kubeflow Trainer's and JobSet's are the same kind of folder, described by
their own ``CrdRelease`` (trainstack.infra.platform.trainer_release).

The platform reads each enabled workload's CRD from ``kubedl:crdSource`` (a folder of the
repository, default ``platform/kubedl/<version>/``). The folder holds a committed lock,
``kubedl.lock.json``: for every workload kind its CRD file, the CRD's name and the file's sha256.
The CRD files themselves are not committed: ``trainstack kubedl mirror --from SRC --to FOLDER``
fills the folder from a release (a checkout of kubedl-io/kubedl at the tag, an unpacked release,
or an https URL such as the team's own bucket), checking every file against the lock.

Because the lock names every CRD, a plan can list each CRD as its own resource before the files
are mirrored (offline, in CI, in tests); ``pulumi up`` refuses to run until they are, and a file
whose checksum differs from the lock is refused everywhere.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainstack.errors import ConfigError
from trainstack.kubedl import KINDS
from trainstack.outfile import write_file
from trainstack.platformnames import KUBEDL_CONFIG_NS

# The KubeDL workload kinds of v0.5.0 and their CRD files under the release's config/crd/bases:
# `<group>_<plural>.yaml`, the plural being the lower-cased kind + "s".
_KUBEDL_KINDS = (
    ("TFJob", "training.kubedl.io"),
    ("PyTorchJob", "training.kubedl.io"),
    ("XGBoostJob", "training.kubedl.io"),
    ("MPIJob", "training.kubedl.io"),
    ("MarsJob", "training.kubedl.io"),
    ("XDLJob", "training.kubedl.io"),
    ("ElasticDLJob", "training.kubedl.io"),
    ("ElasticBatchJob", "inference.kubedl.io"),
)
KUBEDL_CRDS: dict[str, str] = {
    kind: f"{group}_{kind.lower()}s.yaml" for kind, group in _KUBEDL_KINDS
}


def crd_resource(kind: str) -> tuple[str, str]:
    """A KubeDL kind's API group and plural, as its CRD file is named (`<group>_<plural>.yaml`)."""
    group, _, rest = KUBEDL_CRDS[kind].partition("_")
    return group, rest.removesuffix(".yaml")


# What a platform installs unless kubedl:workloads says otherwise: every KubeDL kind trainstack
# renders (trainstack.kubedl.KINDS; a custom batch/v1 Job needs no CRD).
DEFAULT_WORKLOADS = tuple(kind for kind in KUBEDL_CRDS if kind in {k.kind for k in KINDS.values()})

LOCK_NAME = "kubedl.lock.json"
# Where a release keeps its CRDs (KubeDL v0.5.0 config/crd/bases/*.yaml); the Helm chart's copies
# are stale (they lack schedulingPolicy.queue/priorityClassName), so they are never used.
RELEASE_PATH = "config/crd/bases"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CrdRelease:
    """Whose CRD folder this is: the name `trainstack kubedl mirror --release` takes, the config
    namespace its keys live in, the lock's file name, where a checkout of the release keeps the
    CRD files, and every kind's file."""

    name: str  # kubedl, trainer, jobset
    title: str  # as messages name it
    config_ns: str  # `<config_ns>:crdSource`, `<config_ns>:version`
    lock_name: str
    release_path: str
    crds: Mapping[str, str]  # kind -> file
    repository: str  # what `--from` is a checkout of
    # Kinds that are cluster-scoped besides the `Cluster*` ones (an unmirrored CRD's placeholder)
    cluster_kinds: tuple[str, ...] = ()

    def folder(self, version: str) -> str:
        return f"platform/{self.name}/{version}"


KUBEDL_RELEASE = CrdRelease(
    name="kubedl",
    title="KubeDL",
    config_ns=KUBEDL_CONFIG_NS,
    lock_name=LOCK_NAME,
    release_path=RELEASE_PATH,
    crds=KUBEDL_CRDS,
    repository="kubedl-io/kubedl",
)


def mirror_command(folder: str, release: CrdRelease = KUBEDL_RELEASE) -> str:
    option = "" if release is KUBEDL_RELEASE else f" --release {release.name}"
    return (
        f"trainstack kubedl mirror{option} --from <{release.name} release checkout, folder or "
        f"https URL> --to {folder}"
    )


@dataclass(frozen=True)
class LockEntry:
    kind: str
    file: str
    name: str  # the CRD's metadata.name, e.g. tfjobs.training.kubedl.io
    sha256: str


@dataclass(frozen=True)
class Lock:
    version: str
    entries: dict[str, LockEntry]  # workload kind -> entry


@dataclass(frozen=True)
class CrdFile:
    """One enabled workload's CRD: always its name and checksum; its document once mirrored."""

    kind: str
    file: str
    name: str
    sha256: str
    document: dict[str, Any] | None  # None only in an offline plan of an unmirrored folder


def read_lock(folder: Path, shown: str, release: CrdRelease = KUBEDL_RELEASE) -> Lock:
    lock_name = release.lock_name
    path = folder / lock_name
    if not path.is_file():
        raise ConfigError(
            f"{release.config_ns}:crdSource: {shown} has no {lock_name}",
            hint=f"create it from a release you trust: {mirror_command(shown, release)} "
            "--write-lock",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = {
            kind: LockEntry(
                kind=kind, file=str(e["file"]), name=str(e["name"]), sha256=str(e["sha256"])
            )
            for kind, e in dict(data["crds"]).items()
        }
        version = str(data["version"])
    except (ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{shown}/{lock_name}: not a {release.title} CRD lock ({err})") from None
    for entry in entries.values():
        if not _SHA256.fullmatch(entry.sha256) or "/" in entry.file:
            raise ConfigError(
                f"{shown}/{lock_name}: crds.{entry.kind}: expected a file name and "
                f"a sha256, got {entry.file!r} and {entry.sha256!r}"
            )
    return Lock(version=version, entries=entries)


def load_crds(
    folder: Path,
    shown: str,
    version: str,
    workloads: tuple[str, ...],
    *,
    offline: bool,
    release: CrdRelease = KUBEDL_RELEASE,
) -> tuple[tuple[CrdFile, ...], tuple[str, ...]]:
    """The enabled workloads' CRDs, verified; and what is still to do (offline plans only).

    Online (``pulumi up``/``preview``) a missing file is a ``ConfigError`` that names the command
    which fills the folder; offline it is a pending step and the CRD is planned by name alone.
    """
    lock = read_lock(folder, shown, release)
    ns, lock_name = release.config_ns, release.lock_name
    if lock.version != version:
        raise ConfigError(
            f"{ns}:crdSource: {shown}/{lock_name} is for {release.title} {lock.version}, "
            f"but {ns}:version is {version}",
            hint=f"point {ns}:crdSource at {release.folder(version)}/",
        )
    missing_kinds = [w for w in workloads if w not in lock.entries]
    if missing_kinds:
        raise ConfigError(
            f"{ns}:crdSource: {shown}/{lock_name} has no CRD for {', '.join(missing_kinds)}"
        )
    crds: list[CrdFile] = []
    absent: list[str] = []
    for kind in workloads:
        entry = lock.entries[kind]
        path = folder / entry.file
        document: dict[str, Any] | None = None
        if path.is_file():
            document = parse_crd(path.read_bytes(), entry, f"{shown}/{entry.file}")
        else:
            absent.append(entry.file)
        crds.append(
            CrdFile(
                kind=kind, file=entry.file, name=entry.name, sha256=entry.sha256, document=document
            )
        )
    pending: tuple[str, ...] = ()
    if absent:
        message = (
            f"{ns}:crdSource: {shown} does not hold {', '.join(absent)} "
            f"(the CRD files are mirrored, not committed)"
        )
        how = mirror_command(shown, release)
        if not offline:
            raise ConfigError(message, hint=f"fill it: {how}")
        pending = (f"{message}; fill it: {how}",)
    return tuple(crds), pending


def parse_crd(content: bytes, entry: LockEntry, shown: str) -> dict[str, Any]:
    digest = hashlib.sha256(content).hexdigest()
    if digest != entry.sha256:
        raise ConfigError(
            f"{shown}: sha256 {digest} does not match the lock ({entry.sha256})",
            hint="mirror the file again from the pinned release; never edit it",
        )
    docs = [d for d in yaml.safe_load_all(content) if d]
    if (
        len(docs) != 1
        or not isinstance(docs[0], dict)
        or docs[0].get("kind") != "CustomResourceDefinition"
    ):
        raise ConfigError(f"{shown}: expected exactly one CustomResourceDefinition")
    doc: dict[str, Any] = docs[0]
    name = (doc.get("metadata") or {}).get("name")
    if name != entry.name:
        raise ConfigError(f"{shown}: defines {name!r}, the lock says {entry.name!r}")
    return doc


# --- trainstack kubedl mirror ------------------------------------------------------------------


def _read_source(source: str, file: str, release_path: str = RELEASE_PATH) -> bytes:
    if re.match(r"https://", source):
        url = source.rstrip("/") + "/" + file
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return bytes(response.read())
        except OSError as err:
            raise ConfigError(f"--from: cannot download {url} ({err})") from None
    if "://" in source:
        raise ConfigError(
            f"--from: expected a folder or an https:// URL, got {source!r}",
            hint="for a bucket, use its https URL (or ossutil cp it to a folder)",
        )
    base = Path(source)
    for candidate in (base / release_path / file, base / file):
        if candidate.is_file():
            return candidate.read_bytes()
    raise ConfigError(f"--from: {source} holds neither {release_path}/{file} nor {file}")


def mirror(
    source: str,
    folder: Path,
    workloads: tuple[str, ...] | None = None,
    *,
    write_lock_version: str | None = None,
    release: CrdRelease = KUBEDL_RELEASE,
) -> list[Path]:
    """Copy the locked CRD files from ``source`` into ``folder``, each checked against the lock.

    ``write_lock_version`` instead trusts ``source`` and (re)writes the lock from it: the step
    for a new release, reviewed in the pull request that adds the lock.
    """
    shown = str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if write_lock_version is not None:
        kinds = workloads or tuple(release.crds)
        crds: dict[str, dict[str, str]] = {}
        for kind in kinds:
            file = release.crds[kind]
            content = _read_source(source, file, release.release_path)
            docs = [d for d in yaml.safe_load_all(content) if d]
            name = str(((docs[0] if docs else {}) or {}).get("metadata", {}).get("name", ""))
            crds[kind] = {"file": file, "name": name, "sha256": hashlib.sha256(content).hexdigest()}
        write_file(
            folder / release.lock_name,
            json.dumps(
                {
                    "version": write_lock_version,
                    "releasePath": release.release_path,
                    "crds": crds,
                },
                indent=2,
                sort_keys=True,
            )
            + "\n",
        )
    lock = read_lock(folder, shown, release)
    kinds = workloads or tuple(lock.entries)
    written: list[Path] = []
    for kind in kinds:
        if kind not in lock.entries:
            raise ConfigError(f"{shown}/{release.lock_name} has no CRD for {kind}")
        entry = lock.entries[kind]
        content = _read_source(source, entry.file, release.release_path)
        parse_crd(content, entry, f"{source}: {entry.file}")  # verified before it is written
        written.append(write_file(folder / entry.file, content))
    return written
