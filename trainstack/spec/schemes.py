"""What each binding URI scheme is, in one record per scheme (as trainstack.kubedl keeps one per
job kind): what its location names and how one is checked, whether a local run reaches it,
whether a platform's artifact store may be one and can expire logs there, and the CSI driver its
cluster volumes use. A new scheme is its record here and its volume in render/storage.py
(tests/spec/test_schemes.py checks the renderer builds every scheme this module knows)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from trainstack import k8snames
from trainstack.platformnames import OSS_CSI_DRIVER
from trainstack.spec.model import Scheme


@dataclass(frozen=True)
class StorageScheme:
    scheme: Scheme
    location: str  # what comes after scheme:// ("" for file://, which has none)
    example: str  # a URI of this scheme, for hints
    location_pattern: str | None = None  # a location this does not match is refused
    location_refusal: str = ""  # {location} is replaced
    local: bool = False  # `trainstack run --local` binds it (to a path on this machine)
    artifact_store: bool = False  # a platform's artifactStore may be one
    expires: bool = False  # a lifecycle rule can expire what is under a prefix (logs)
    csi_driver: str | None = None  # the CSI driver of its PersistentVolumes on a cluster

    @property
    def prefix(self) -> str:
        return f"{self.scheme.value}://"

    def location_problem(self, location: str) -> str | None:
        """Why `location` is not one of this scheme's; None when it is."""
        if self.location_pattern is None or re.fullmatch(self.location_pattern, location):
            return None
        return self.location_refusal.format(location=repr(location))


SCHEMES: Mapping[Scheme, StorageScheme] = {
    Scheme.FILE: StorageScheme(
        Scheme.FILE, location="", example="file://./data/train/", local=True
    ),
    Scheme.OSS: StorageScheme(
        Scheme.OSS,
        location="bucket",
        example="oss://bucket/prefix/",
        # a bucket name, or bucket.endpoint (OSS: 3-63 of [a-z0-9-]; an endpoint adds dots)
        location_pattern=r"[a-z0-9][a-z0-9.-]{1,254}",
        location_refusal="{location} is not a valid OSS bucket (or bucket.endpoint)",
        artifact_store=True,
        expires=True,
        csi_driver=OSS_CSI_DRIVER,
    ),
    Scheme.NAS: StorageScheme(
        Scheme.NAS,
        location="NAS server or file system",
        example="nas://server/path/",
        artifact_store=True,
        # a binding's static PV is plain NFS (render/storage.py); the NAS CSI driver only
        # provisions the platform's NAS storage class (platformnames.NAS_CSI_DRIVER)
    ),
    Scheme.PVC: StorageScheme(
        Scheme.PVC,
        location="claim name",
        example="pvc://claim/path/",
        location_pattern=k8snames.NAME_253.replace("[-a-z0-9]", "[-a-z0-9.]"),
        location_refusal="{location} is not a valid PersistentVolumeClaim name",
        artifact_store=True,
    ),
}


def storage_scheme(uri: str) -> StorageScheme | None:
    """The record of `uri`'s scheme; None for one trainstack does not know."""
    name = uri.partition("://")[0]
    return next((s for s in SCHEMES.values() if s.scheme.value == name), None)


STORE_SCHEMES = tuple(s.scheme.value for s in SCHEMES.values() if s.artifact_store)
