"""The typed context the templates render: plain frozen records, no behaviour beyond `k8s()`.

Builders (storage, code) each return a `PodParts` of what they add; `context.py` adds them up in
one visible order (code, channels, config, metrics) and hands the sum to the pod builder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trainstack.contract.layout import Layout

ML = Layout.at()  # the container's /ml tree
STAGING = ML.staging.rstrip("/")  # where the prepare init container sees sources it copies from
DEFAULT_WORKING_DIR = ML.code.rstrip("/")


@dataclass(frozen=True)
class Mount:
    volume: str
    path: str
    read_only: bool = False
    sub_path: str | None = None

    def k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.volume, "mountPath": self.path.rstrip("/") or "/"}
        if self.read_only:
            out["readOnly"] = True
        if self.sub_path:
            out["subPath"] = self.sub_path
        return out


@dataclass(frozen=True)
class Env:
    """A container env entry: a literal `value`, or `value_from` (a secretKeyRef) — never both."""

    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...] | None
    args: tuple[str, ...] | None
    working_dir: str | None
    env: tuple[Env, ...]
    ports: tuple[dict[str, Any], ...] | None
    resources: dict[str, Any] | None
    mounts: tuple[dict[str, Any], ...]
    # An MPI node's sshd on Kubeflow Trainer: Ready once it listens (trainstack.render.mpiruntime).
    readiness_probe: dict[str, Any] | None = None


@dataclass(frozen=True)
class Pod:
    labels: dict[str, str]
    restart_policy: str | None
    service_account: str | None
    priority_class: str | None
    security_context: dict[str, Any]
    pull_secrets: list[dict[str, str]] | None
    node_selector: dict[str, str] | None
    tolerations: list[dict[str, Any]] | None
    affinity: dict[str, Any] | None
    spread: list[dict[str, Any]] | None
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    volumes: list[dict[str, Any]]
    # A KubeDL job's replicas on a Kueue environment: its plain-pod group (trainstack.kueue).
    annotations: dict[str, str] | None = None


@dataclass(frozen=True)
class Replica:
    type: str
    replicas: int
    restart_policy: str
    pod: Pod


@dataclass(frozen=True)
class PersistentVolume:
    name: str
    labels: dict[str, str]
    access_mode: str
    csi: dict[str, Any] | None = None
    nfs: dict[str, Any] | None = None
    mount_options: list[str] | None = None
    capacity: str = "20Gi"  # nominal: OSS and NAS have no size, the API requires one
    claim_ref: dict[str, str] | None = None  # pre-bound to this claim ({namespace, name})


@dataclass(frozen=True)
class Claim:
    name: str
    namespace: str
    labels: dict[str, str]
    access_mode: str
    volume_name: str
    capacity: str = "20Gi"


@dataclass(frozen=True)
class ConfigMap:
    name: str
    namespace: str
    labels: dict[str, str]
    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None


@dataclass(frozen=True)
class Meta:
    name: str
    namespace: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Access:
    """A Role bound to a ServiceAccount (created too when `account_meta` is set)."""

    name: str  # of the Role and the RoleBinding
    namespace: str
    labels: dict[str, str]
    rules: list[dict[str, Any]]
    service_account: str
    account_meta: Meta | None = None


@dataclass(frozen=True)
class PodParts:
    """What one builder adds to every replica's pod, and beside the job. Immutable: builders
    return parts and `+` adds them up (lists concatenate in order, later annotations and a later
    working directory win), so no builder depends on what another already wrote."""

    volumes: tuple[dict[str, Any], ...] = ()
    mounts: tuple[Mount, ...] = ()
    stage_mounts: tuple[Mount, ...] = ()  # prepare init container only
    stage_steps: tuple[str, ...] = ()  # its shell lines, quoted by builders
    init_containers: tuple[Container, ...] = ()
    volumes_beside: tuple[PersistentVolume, ...] = ()
    claims: tuple[Claim, ...] = ()
    config_maps: tuple[ConfigMap, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    working_dir: str | None = None  # None: the default, DEFAULT_WORKING_DIR

    def __add__(self, other: PodParts) -> PodParts:
        return PodParts(
            volumes=self.volumes + other.volumes,
            mounts=self.mounts + other.mounts,
            stage_mounts=self.stage_mounts + other.stage_mounts,
            stage_steps=self.stage_steps + other.stage_steps,
            init_containers=self.init_containers + other.init_containers,
            volumes_beside=self.volumes_beside + other.volumes_beside,
            claims=self.claims + other.claims,
            config_maps=self.config_maps + other.config_maps,
            annotations=MappingProxyType({**self.annotations, **other.annotations}),
            working_dir=other.working_dir or self.working_dir,
        )

    @property
    def effective_working_dir(self) -> str:
        return self.working_dir or DEFAULT_WORKING_DIR


def combine(parts: Iterable[PodParts]) -> PodParts:
    total = PodParts()
    for part in parts:
        total = total + part
    return total
