"""A Trainer environment's install config: ``trainer:*`` and ``jobset:*``, read only when
``trainstack:operator`` is ``trainer`` (a KubeDL environment that sets one is refused, naming the
key), in the style of ``kubedl:*``: a pinned version, a CRD folder checked against its lock, the
controller's image (pinned by digest on ack) and namespace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainstack import k8snames
from trainstack.errors import ConfigError
from trainstack.infra.configread import Pending, Section, split_namespace
from trainstack.infra.platform.kubedl_source import CrdFile, CrdRelease, load_crds
from trainstack.infra.platform.trainer_release import (
    JOBSET,
    JOBSET_RELEASE,
    JOBSET_UPSTREAM_IMAGE,
    TRAINER,
    TRAINER_RELEASE,
    TRAINER_UPSTREAM_IMAGE,
)
from trainstack.trainer.versions import JOBSET_VERSION, TRAINER_VERSION

_DIGEST = re.compile(r".+@sha256:[0-9a-f]{64}")
# Docker Hub's names: nodes in China regions generally cannot pull from it (kubedl:image and the
# Trainer images alike, on ack).
DOCKER_HUB_HOSTS = ("docker.io", "index.docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class ControllerConfig:
    """One of the two installs: Trainer's or JobSet's."""

    version: str
    crd_source: str
    crds: tuple[CrdFile, ...]  # every kind of the release's lock, verified
    image: str | None  # None (ack, before it is mirrored): CRDs and RBAC only, a warning
    namespace: str


@dataclass(frozen=True)
class TrainerConfig:
    trainer: ControllerConfig
    jobset: ControllerConfig


def image_how(release: CrdRelease) -> str:
    return (
        f"mirror {release.title}'s controller image into the platform's registry and pin its "
        f"digest: pulumi config set {release.config_ns}:image "
        f"<registry>/<namespace>/{release.name}@sha256:<digest> (docs/platform.md)"
    )


def refuse_unused(values: Mapping[str, Any], source: str) -> None:
    """A KubeDL environment names no Trainer key: it would be silently ignored."""
    for release in (TRAINER_RELEASE, JOBSET_RELEASE):
        keys = sorted(split_namespace(values, release.config_ns))
        if keys:
            raise ConfigError(
                f"{source}: {release.config_ns}:{keys[0]}: only used when "
                "trainstack:operator is trainer",
                hint="set trainstack:operator: trainer, or remove the key",
            )


def load_trainer(
    values: Mapping[str, Any], source: str, *, ack: bool, root: Path, pending: Pending
) -> TrainerConfig:
    return TrainerConfig(
        trainer=_load(
            values,
            source,
            TRAINER_RELEASE,
            TRAINER_VERSION,
            TRAINER.namespace,
            TRAINER_UPSTREAM_IMAGE,
            ack=ack,
            root=root,
            pending=pending,
        ),
        jobset=_load(
            values,
            source,
            JOBSET_RELEASE,
            JOBSET_VERSION,
            JOBSET.namespace,
            JOBSET_UPSTREAM_IMAGE,
            ack=ack,
            root=root,
            pending=pending,
        ),
    )


def _load(
    values: Mapping[str, Any],
    source: str,
    release: CrdRelease,
    default_version: str,
    default_namespace: str,
    upstream: str,
    *,
    ack: bool,
    root: Path,
    pending: Pending,
) -> ControllerConfig:
    ns = release.config_ns
    sec = Section(split_namespace(values, ns), f"{ns}:", source, top_level=True)
    version = sec.string(
        "version", default_version, pattern=r"v\d+\.\d+\.\d+", what="a pinned release tag"
    )
    crd_source = sec.string(
        "crdSource",
        release.folder(version),
        pattern=r"[A-Za-z0-9._/-]+",
        what=f"a folder of the repository such as {release.folder(version)}",
    )
    if crd_source.startswith("/") or ".." in crd_source.split("/"):
        raise sec.error("crdSource", "a folder inside the repository", crd_source)
    image = _image(sec, release, upstream, ack=ack, pending=pending)
    namespace = sec.string(
        "namespace", default_namespace, pattern=k8snames.LABEL_63, what="a DNS label"
    )
    sec.finish()
    crds, crd_pending = load_crds(
        root / crd_source,
        crd_source.rstrip("/"),
        version,
        tuple(release.crds),
        offline=pending.offline,
        release=release,
    )
    for step in crd_pending:
        pending.add(step)
    return ControllerConfig(version, crd_source, crds, image, namespace)


def _image(
    sec: Section, release: CrdRelease, upstream: str, *, ack: bool, pending: Pending
) -> str | None:
    """The controller's image: the release's own tag off ack; on ack a digest in a registry the
    nodes reach (left unset for the first `pulumi up`, which creates that registry)."""
    return image_setting(
        sec,
        "image",
        upstream,
        image_how(release),
        f"{release.title}'s controller is not deployed (its CRDs and RBAC are)",
        ack=ack,
        pending=pending,
    )


def image_setting(
    sec: Section,
    key: str,
    upstream: str,
    how: str,
    unset: str,
    *,
    ack: bool,
    pending: Pending,
) -> str | None:
    """An image key of `sec`: `upstream` off ack; on ack a digest in a registry the nodes
    reach, and while it is unset None, with a pending step saying what is not deployed (`unset`)
    and `how` to set it."""
    if ack and not sec.has(key):
        pending.add(f"{sec.key(key)} is not set, so {unset}: {how}")
        return None
    image = sec.string(
        key, upstream, pattern=r"[^\s@]+(:[\w.-]+)?(@sha256:\S+)?", what="an image reference"
    )
    if image.endswith(":latest"):
        raise sec.error(key, "a pinned tag or digest, not :latest", image, hint=how)
    first = image.split("/", 1)[0]
    # No registry host (`kubeflow/x`) is Docker Hub too, which nodes in China regions generally
    # cannot reach.
    hub = "/" not in image or not ("." in first or ":" in first) or first in DOCKER_HUB_HOSTS
    if ack and (not _DIGEST.fullmatch(image) or hub):
        raise sec.error(
            key,
            "an image pinned by digest in a registry the nodes reach on ack",
            image,
            hint=how,
        )
    return image
