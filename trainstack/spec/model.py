"""The typed spec model: what the loader returns and everything downstream consumes.

All objects are frozen. Mappings are `FrozenMap`s (read-only, picklable, insertion-ordered) so that
iteration order — and therefore every rendered manifest — is deterministic.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from trainstack.kubedl.jobtype import JobType as JobType
from trainstack.spec.enums import BindingMode as BindingMode
from trainstack.spec.enums import ParamType as ParamType
from trainstack.spec.enums import Scheduling as Scheduling

K = TypeVar("K")
V = TypeVar("V")

ParamValue = int | float | str | bool


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """A read-only mapping that keeps insertion order, compares by value and pickles."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[K, V] | None = None) -> None:
        self._data: dict[K, V] = dict(data or {})

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))


# JobType and every per-kind fact (roles, replica types, operator behaviour) live in
# trainstack.kubedl; JobType is re-exported here for the model's users.


# --- component -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """Inclusive bounds. For String parameters the bounds apply to the value's length."""

    min: int | float | None = None
    max: int | float | None = None


@dataclass(frozen=True)
class Parameter:
    name: str
    type: ParamType
    default: ParamValue | None = None
    required: bool = False
    description: str = ""
    range: Range | None = None
    enum: tuple[ParamValue, ...] | None = None


@dataclass(frozen=True)
class InputChannel:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class OutputChannel:
    name: str
    description: str = ""
    # Filled from the bound location before the job starts (checkpoint resume).
    preload: bool = False


class CodeSource(enum.StrEnum):
    """Where a component's code comes from (`spec.code`). A StrEnum: its value is the word."""

    LOCAL = "local"  # a directory next to the component
    OSS = "oss"  # oss://bucket/prefix/
    GIT = "git"  # {git: URL, branch, commit}


class Scheme(enum.StrEnum):
    """A binding URI's scheme."""

    FILE = "file"
    OSS = "oss"
    NAS = "nas"
    PVC = "pvc"


@dataclass(frozen=True)
class GitCode:
    url: str
    branch: str | None = None
    commit: str | None = None


@dataclass(frozen=True)
class Code:
    """Where the component's code comes from. Exactly one of path/uri/git is set."""

    kind: CodeSource
    path: Path | None = None  # local: absolute directory
    uri: str | None = None  # oss://bucket/prefix/
    git: GitCode | None = None


@dataclass(frozen=True)
class Constraints:
    machine_types: tuple[str, ...] = ("cpu", "gpu")
    multi_node: bool = True
    multi_gpu: bool = True


@dataclass(frozen=True)
class Component:
    name: str
    version: str
    job_type: JobType
    image: str
    command: str
    description: str = ""
    version_description: str = ""
    image_pull_secret: str | None = None
    code: Code | None = None
    inputs: tuple[InputChannel, ...] = ()
    outputs: tuple[OutputChannel, ...] = ()
    parameters: tuple[Parameter, ...] = ()
    constraints: Constraints = field(default_factory=Constraints)
    source: Path | None = None  # the component.yaml it was loaded from

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def input(self, name: str) -> InputChannel | None:
        return next((c for c in self.inputs if c.name == name), None)

    def output(self, name: str) -> OutputChannel | None:
        return next((c for c in self.outputs if c.name == name), None)


# --- run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """A storage location bound to a channel: `scheme://location/path`.

    `is_file` is true when the binding names one file: the channel's env var then points at that
    file inside the channel directory (PAI Designer: `PAI_INPUT_TEST=/ml/input/data/test/test.csv`).
    """

    uri: str
    scheme: Scheme
    location: str  # bucket, NAS server, claim name; "" for file://
    path: str  # path inside the location, always starting with "/"
    is_file: bool = False
    mode: BindingMode = BindingMode.MOUNT

    @property
    def filename(self) -> str | None:
        return self.path.rstrip("/").rsplit("/", 1)[-1] if self.is_file else None


@dataclass(frozen=True)
class ModelInput:
    """A model version used for incremental training (at most 10 per run)."""

    name: str
    binding: Binding
    version: str | None = None


@dataclass(frozen=True)
class Quantity:
    """A Kubernetes quantity: the canonical text and its value in base units (bytes or cores)."""

    text: str
    value: float


@dataclass(frozen=True)
class RoleResources:
    replicas: int = 1
    cpu: Quantity | None = None
    memory: Quantity | None = None
    gpu: int = 0
    shared_memory: Quantity | None = None


@dataclass(frozen=True)
class Spot:
    """Preemptible placement. At most one of the bid forms is set; neither means market price."""

    bid_discount: int | None = None  # percent of the market price, 10..90 in steps of 10
    bid_price: float | None = None


@dataclass(frozen=True)
class FaultTolerance:
    max_restarts: int = 3
    unconditional: bool = False
    # spec.faultTolerance.hangTimeout: the launcher restarts a replica silent this long in place
    hang_timeout_seconds: int | None = None


@dataclass(frozen=True)
class TorchElastic:
    """`spec.torchElastic`: the command runs under torchrun's elastic agent (c10d rendezvous on
    the master); `max_restarts` is how often the agents may restart their workers."""

    max_restarts: int = 3


@dataclass(frozen=True)
class Advanced:
    """DLC advanced parameters that apply to a cluster you own."""

    custom_ports: tuple[int, ...] = ()
    custom_port_num_per_worker: int | None = None
    create_svc_for_all_workers: bool = False


@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret in the run's namespace: where a `secretEnv` value comes from.
    The spec, the model and everything derived from them hold this reference, never the value."""

    secret: str
    key: str

    def __str__(self) -> str:
        return f"{self.secret}/{self.key}"


@dataclass(frozen=True)
class Run:
    name: str
    component: Component
    component_ref: str  # as written in the spec
    description: str = ""
    experiment: str | None = None
    tags: FrozenMap[str, str] = field(default_factory=FrozenMap)
    # Effective hyperparameters in the component's declaration order: given values, then
    # defaults; parameters with neither are absent.
    parameters: FrozenMap[str, ParamValue] = field(default_factory=FrozenMap)
    inputs: FrozenMap[str, Binding] = field(default_factory=FrozenMap)
    outputs: FrozenMap[str, Binding] = field(default_factory=FrozenMap)
    models: tuple[ModelInput, ...] = ()
    resources: FrozenMap[str, RoleResources] = field(default_factory=FrozenMap)
    priority: int | None = None
    scheduling: Scheduling = Scheduling.INTELLIGENT
    spot: Spot | None = None
    fault_tolerance: FaultTolerance | None = None
    torch_elastic: TorchElastic | None = None
    env: FrozenMap[str, str] = field(default_factory=FrozenMap)
    # NAME → the Secret key its value comes from (on a cluster: secretKeyRef; locally: the
    # runner's own environment variable NAME). Sorted by NAME.
    secret_env: FrozenMap[str, SecretRef] = field(default_factory=FrozenMap)
    timeout_seconds: int | None = None
    # spec.keepAfterFinished: ttlSecondsAfterFinished; None means the kind's default
    # (trainstack.kubedl JobKind.default_ttl_seconds).
    keep_seconds: int | None = None
    # spec.keepLogs: the replicas' logs never expire (trainstack.infra.logplace).
    keep_logs: bool = False
    run_as_user: int = 1000
    image_pull_secret: str | None = None  # overrides the component's
    namespace: str | None = None
    service_account: str | None = None
    advanced: Advanced = field(default_factory=Advanced)
    source: Path | None = None  # the run file it was loaded from

    @property
    def job_type(self) -> JobType:
        return self.component.job_type

    @property
    def pull_secret(self) -> str | None:
        return self.image_pull_secret or self.component.image_pull_secret

    @property
    def total_replicas(self) -> int:
        return sum(r.replicas for r in self.resources.values())

    @property
    def uses_gpu(self) -> bool:
        return any(r.gpu > 0 for r in self.resources.values())
