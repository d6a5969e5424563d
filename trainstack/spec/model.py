"""The typed spec model: what the loader returns and everything downstream consumes, and the
one declaration of every spec field (`declare`, trainstack.spec.fields): the schema, the loading
and training_job.json are read off these dataclasses. Adding a field to a spec is adding it
here (and using it).

All objects are frozen. Mappings are `FrozenMap`s (read-only, picklable, insertion-ordered) so that
iteration order — and therefore every rendered manifest — is deterministic.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from trainstack import k8snames
from trainstack.kubedl.jobtype import JobType as JobType
from trainstack.spec import shapes as sh
from trainstack.spec.enums import BindingMode as BindingMode
from trainstack.spec.enums import ParamType as ParamType
from trainstack.spec.enums import Scheduling as Scheduling
from trainstack.spec.fields import Load, Section, declare

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

N = Section.NESTED
M = Section.METADATA
S = Section.SPEC


@dataclass(frozen=True)
class Range:
    """Inclusive bounds. For String parameters the bounds apply to the value's length."""

    min: int | float | None = declare(N, "min", {"type": ["integer", "float"]}, default=None)
    max: int | float | None = declare(N, "max", {"type": ["integer", "float"]}, default=None)


def _channel_name() -> dict[str, object]:
    return sh.str_rule(sh.CHANNEL_NAME, sh.CHANNEL_EXPECT, required=True)


@dataclass(frozen=True)
class Parameter:
    name: str = declare(N, "name", _channel_name())
    type: ParamType = declare(
        N,
        "type",
        {"type": "string", "required": True, "allowed": sh.PARAM_TYPES},
        load=Load.ENUM,
        nested=ParamType,
    )
    default: ParamValue | None = declare(N, "default", {"type": sh.SCALAR}, default=None)
    required: bool = declare(N, "required", sh.bool_rule(), default=False)
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    range: Range | None = declare(
        N, "range", {"type": "dict"}, default=None, load=Load.OPTIONAL_NESTED, nested=Range
    )
    enum: tuple[ParamValue, ...] | None = declare(
        N,
        "enum",
        {
            "type": "list",
            "minlength": 1,
            "maxlength": 1000,
            "schema": {"type": ["string", "integer", "float"]},
        },
        default=None,
    )

    def __post_init__(self) -> None:
        # Floats written as integers (`lr: 1`) are floats, so the contract prints them alike.
        if self.type is ParamType.FLOAT:
            if self.default is not None:
                object.__setattr__(self, "default", float(self.default))
            if self.enum is not None:
                object.__setattr__(self, "enum", tuple(float(e) for e in self.enum))
        elif self.enum is not None and not isinstance(self.enum, tuple):
            object.__setattr__(self, "enum", tuple(self.enum))

    def coerce(self, value: ParamValue) -> ParamValue:
        """A value given for this parameter, as its type holds it."""
        return float(value) if self.type is ParamType.FLOAT else value


@dataclass(frozen=True)
class InputChannel:
    name: str = declare(N, "name", _channel_name())
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    required: bool = declare(N, "required", sh.bool_rule(), default=False)


@dataclass(frozen=True)
class OutputChannel:
    name: str = declare(N, "name", _channel_name())
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    # Filled from the bound location before the job starts (checkpoint resume).
    preload: bool = declare(N, "preload", sh.bool_rule(), default=False)


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
    url: str = declare(
        N,
        "git",
        sh.str_rule(
            r"(https?://|ssh://|git@)\S+",
            "a git URL (https://, ssh:// or git@host:repo)",
            required=True,
        ),
    )
    branch: str | None = declare(
        N, "branch", sh.str_rule(r"[^\s]{1,255}", "a branch name without spaces"), default=None
    )
    commit: str | None = declare(
        N, "commit", sh.str_rule(r"[0-9a-f]{7,64}", "a commit hash (7-64 hex digits)"), default=None
    )


@dataclass(frozen=True)
class Code:
    """Where the component's code comes from. Exactly one of path/uri/git is set."""

    kind: CodeSource
    path: Path | None = None  # local: absolute directory
    uri: str | None = None  # oss://bucket/prefix/
    git: GitCode | None = None


@dataclass(frozen=True)
class Constraints:
    machine_types: tuple[str, ...] = declare(
        N,
        "machineType",
        {"type": "list", "minlength": 1, "schema": {"type": "string", "allowed": ["cpu", "gpu"]}},
        default=("cpu", "gpu"),
        load=Load.UNIQUE,
    )
    multi_node: bool = declare(N, "multiNode", sh.bool_rule(), default=True)
    multi_gpu: bool = declare(N, "multiGpu", sh.bool_rule(), default=True)


@dataclass(frozen=True)
class Component:
    # training_job.json's "component": what the process may want to know of its component.
    name: str = declare(
        M,
        "name",
        sh.str_rule(
            sh.COMPONENT_NAME,
            "1-63 lowercase letters, digits and '-', starting and ending with a letter or digit "
            "(it is a Kubernetes label value)",
            required=True,
        ),
    )
    version: str = declare(
        M, "version", sh.str_rule(sh.SEMVER, "a version x.y.z such as 1.0.0", required=True)
    )
    job_type: JobType = declare(
        S,
        "jobType",
        {"type": "string", "required": True, "allowed": sh.JOB_TYPES},
        load=Load.ENUM,
        nested=JobType,
    )
    image: str = declare(
        S,
        "image",
        sh.str_rule(
            sh.IMAGE,
            "an image reference such as registry.example.com/team/image:tag",
            required=True,
            maxlength=512,
        ),
    )
    command: str = declare(S, "command", sh.str_rule(required=True, empty=False, maxlength=16384))
    # Words for people, not the process.
    description: str = declare(M, "description", sh.str_rule(maxlength=1024), default="", job=False)
    version_description: str = declare(
        M,
        "versionDescription",
        sh.str_rule(maxlength=1024),
        default="",
        job=False,
    )
    # The run's own (which may override it) is written.
    image_pull_secret: str | None = declare(
        S, "imagePullSecret", sh.PULL_SECRET_RULE, default=None, job=False
    )
    # Written as where it came from (its kind): the process finds the code in its working
    # directory.
    code: Code | None = declare(
        S,
        "code",
        {"type": ["string", "dict"], "empty": False},
        default=None,
        load=Load.CODE,
        nested=GitCode,
    )
    # The run's bindings and values of these are written, under the run's fields.
    inputs: tuple[InputChannel, ...] = declare(
        S,
        "inputs",
        {"type": "list"},
        default=(),
        load=Load.NESTED_LIST,
        nested=InputChannel,
        job=False,
    )
    outputs: tuple[OutputChannel, ...] = declare(
        S,
        "outputs",
        {"type": "list"},
        default=(),
        load=Load.NESTED_LIST,
        nested=OutputChannel,
        job=False,
    )
    parameters: tuple[Parameter, ...] = declare(
        S,
        "parameters",
        {"type": "list", "maxlength": sh.MAX_PARAMETERS},
        default=(),
        load=Load.NESTED_LIST,
        nested=Parameter,
        job=False,
    )
    # Checked before the job exists; nothing for the process.
    constraints: Constraints = declare(
        S,
        "constraints",
        {"type": "dict"},
        factory=Constraints,
        load=Load.NESTED,
        nested=Constraints,
        job=False,
    )
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
    replicas: int = declare(N, "replicas", sh.int_rule(1, 10000), default=1)
    cpu: Quantity | None = declare(N, "cpu", sh.QUANTITY_RULE, default=None, load=Load.QUANTITY)
    memory: Quantity | None = declare(
        N, "memory", sh.QUANTITY_RULE, default=None, load=Load.QUANTITY
    )
    gpu: int = declare(N, "gpu", sh.int_rule(0, 128), default=0)
    shared_memory: Quantity | None = declare(
        N, "sharedMemory", sh.QUANTITY_RULE, default=None, load=Load.QUANTITY
    )


@dataclass(frozen=True)
class Spot:
    """Preemptible placement. At most one of the bid forms is set; neither means market price."""

    # percent of the market price, 10..90 in steps of 10
    bid_discount: int | None = declare(
        N,
        "bidDiscount",
        {"type": "integer", "allowed": [10, 20, 30, 40, 50, 60, 70, 80, 90]},
        default=None,
    )
    bid_price: float | None = declare(
        N, "bidPrice", {"type": ["integer", "float"], "min": 0.0001}, default=None
    )

    def __post_init__(self) -> None:
        if self.bid_price is not None:
            object.__setattr__(self, "bid_price", float(self.bid_price))


@dataclass(frozen=True)
class FaultTolerance:
    max_restarts: int = declare(N, "maxRestarts", sh.int_rule(1, 128), default=3)
    unconditional: bool = declare(N, "unconditional", sh.bool_rule(), default=False)
    # No output, metrics or CPU/GPU for this long: the launcher restarts the command in place
    # (trainstack.launcher; at least MIN_HANG_TIMEOUT_SECONDS). Written only when set.
    hang_timeout_seconds: int | None = declare(
        N,
        "hangTimeout",
        {
            "type": ["integer", "string"],
            "regex": sh.DURATION,
            "min": 5,
            "meta": {"expect": "seconds (at least 5), or a duration such as 30m, 1h"},
        },
        default=None,
        load=Load.DURATION,
        job="hangTimeoutSeconds",
    )


@dataclass(frozen=True)
class TorchElastic:
    """`spec.torchElastic`: the command runs under torchrun's elastic agent (c10d rendezvous on
    the master); `max_restarts` is how often the agents may restart their workers."""

    max_restarts: int = declare(N, "maxRestarts", sh.int_rule(0, 1000), default=3)


@dataclass(frozen=True)
class Advanced:
    """DLC advanced parameters that apply to a cluster you own."""

    custom_ports: tuple[int, ...] = declare(
        N,
        "customPortList",
        sh.str_rule(
            r"[0-9]+(-[0-9]+)?(;[0-9]+(-[0-9]+)?)*",
            "ports and ranges separated by ';', such as 10000;10001-10010",
        ),
        default=(),
        load=Load.PORT_LIST,
    )
    custom_port_num_per_worker: int | None = declare(
        N, "customPortNumPerWorker", sh.int_rule(1, 65536), default=None
    )
    create_svc_for_all_workers: bool = declare(
        N, "createSvcForAllWorkers", sh.bool_rule(), default=False
    )


@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret in the run's namespace: where a `secretEnv` value comes from.
    The spec, the model and everything derived from them hold this reference, never the value."""

    secret: str
    key: str

    def __str__(self) -> str:
        return f"{self.secret}/{self.key}"


def _duration(expect: str, lo: int = 1) -> dict[str, object]:
    return {
        "type": ["integer", "string"],
        "regex": sh.DURATION,
        "min": lo,
        "meta": {"expect": expect},
    }


def _binding_map(extra: dict[str, object]) -> dict[str, object]:
    # The plain-string form gets exactly the checks of its {uri: …} form: the same pattern
    # here (a regex applies to strings only, a schema to mappings only), the same
    # values.binding check in rules/run.py.
    return {
        "type": "dict",
        "keysrules": {"type": "string"},
        "valuesrules": {
            "type": ["string", "dict"],
            **sh.URI_PATTERN,
            "schema": {**sh.BINDING_FORM, **extra},
        },
    }


def _name_map(limit: int, values: dict[str, object]) -> dict[str, object]:
    return {
        "type": "dict",
        "maxlength": limit,
        "keysrules": sh.str_rule(sh.ENV_NAME, sh.ENV_NAME_EXPECT),
        "valuesrules": values,
    }


@dataclass(frozen=True)
class Run:
    # First: the one field the file does not give (the loader loads it from `component`).
    # training_job.json's "component": its name, version, kind, image, command and code kind.
    component: Component
    name: str = declare(M, "name", sh.str_rule(sh.RUN_NAME, sh.RUN_NAME_EXPECT, required=True))
    component_ref: str = declare(  # as written in the spec
        S, "component", sh.str_rule(required=True, empty=False), job=False
    )
    description: str = declare(
        M,
        "description",
        sh.str_rule(sh.RUN_DESCRIPTION, "text without any of @^\\#$%&*<>'|\"/", maxlength=256),
        default="",
    )
    experiment: str | None = declare(
        M, "experiment", sh.str_rule(sh.RUN_NAME, sh.RUN_NAME_EXPECT), default=None
    )
    tags: FrozenMap[str, str] = declare(
        M,
        "tags",
        {
            "type": "dict",
            "maxlength": 20,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": "string"},
        },
        factory=FrozenMap,
        load=Load.SORTED_MAP,
    )
    # Effective hyperparameters in the component's declaration order: given values, then
    # defaults; parameters with neither are absent.
    parameters: FrozenMap[str, ParamValue] = declare(
        S,
        "parameters",
        {
            "type": "dict",
            "maxlength": sh.MAX_PARAMETERS,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": sh.SCALAR},
        },
        factory=FrozenMap,
        load=Load.PARAMETERS,
        job="hyperparameters",
    )
    inputs: FrozenMap[str, Binding] = declare(
        S,
        "inputs",
        _binding_map({"mode": {"type": "string", "allowed": sh.BINDING_MODES}}),
        factory=FrozenMap,
        load=Load.INPUTS,
    )
    outputs: FrozenMap[str, Binding] = declare(
        S, "outputs", _binding_map({}), factory=FrozenMap, load=Load.OUTPUTS
    )
    models: tuple[ModelInput, ...] = declare(
        S,
        "models",
        {
            "type": "list",
            "maxlength": sh.MAX_MODELS,
            "schema": {
                "type": "dict",
                "schema": {
                    "name": _channel_name(),
                    "uri": sh.BINDING_FORM["uri"],
                    "version": {"type": ["string", "integer"]},
                },
            },
        },
        default=(),
        load=Load.MODELS,
    )
    resources: FrozenMap[str, RoleResources] = declare(
        S,
        "resources",
        {
            "type": "dict",
            "keysrules": {"type": "string"},
            "valuesrules": {"type": "dict"},
        },
        factory=FrozenMap,
        load=Load.RESOURCES,
        nested=RoleResources,
    )
    priority: int | None = declare(S, "priority", sh.int_rule(1, 9), default=None)
    scheduling: Scheduling = declare(
        S,
        "scheduling",
        {"type": "string", "allowed": sh.SCHEDULING},
        default=Scheduling.INTELLIGENT,
        load=Load.ENUM,
        nested=Scheduling,
    )
    spot: Spot | None = declare(
        S,
        "spot",
        {"type": ["boolean", "dict"]},
        default=None,
        load=Load.OPTIONAL_NESTED,
        nested=Spot,
    )
    fault_tolerance: FaultTolerance | None = declare(
        S,
        "faultTolerance",
        {"type": "dict"},
        default=None,
        load=Load.OPTIONAL_NESTED,
        nested=FaultTolerance,
    )
    # PyTorch only: run the command under torchrun's elastic agent, so that when a replica is
    # recreated the others restart their workers and all resume (docs/contract.md). Written
    # only when set: how the command is launched.
    torch_elastic: TorchElastic | None = declare(
        S,
        "torchElastic",
        {"type": "dict"},
        default=None,
        load=Load.OPTIONAL_NESTED,
        nested=TorchElastic,
    )
    env: FrozenMap[str, str] = declare(
        S, "env", _name_map(sh.MAX_ENV, {"type": sh.SCALAR}), factory=FrozenMap, load=Load.ENV
    )
    # NAME → the Secret key its value comes from (on a cluster: secretKeyRef; locally: the
    # runner's own environment variable NAME). Sorted by NAME. A wrong value here may be the
    # pasted secret itself: never echoed.
    secret_env: FrozenMap[str, SecretRef] = declare(
        S,
        "secretEnv",
        _name_map(
            sh.MAX_ENV,
            {
                **sh.str_rule(sh.SECRET_REF, sh.SECRET_REF_EXPECT),
                "meta": {"expect": sh.SECRET_REF_EXPECT, "redact": True},
            },
        ),
        factory=FrozenMap,
        load=Load.SECRET_ENV,
    )
    timeout_seconds: int | None = declare(
        S,
        "timeout",
        _duration("seconds, or a duration such as 90m, 24h, 1h30m, 2d"),
        default=None,
        load=Load.DURATION,
        job="timeoutSeconds",
    )
    # spec.keepAfterFinished: ttlSecondsAfterFinished (how long the finished job, its pods and
    # their logs stay); None means the kind's default (trainstack.kubedl JobKind.
    # default_ttl_seconds). The cluster's business, not the process's.
    keep_seconds: int | None = declare(
        S,
        "keepAfterFinished",
        _duration("seconds, or a duration such as 12h, 1d, 7d"),
        default=None,
        load=Load.DURATION,
        job=False,
    )
    # spec.keepLogs: the replicas' logs stay in the artifact store for good (ModelArts'
    # "permanent logs"), beside the run's outputs, instead of expiring after the platform's
    # logRetentionDays (trainstack.infra.logplace). Not the process's business.
    keep_logs: bool = declare(S, "keepLogs", sh.bool_rule(), default=False, job=False)
    run_as_user: int = declare(S, "runAsUser", sh.int_rule(0, 65535), default=1000)
    # Overrides the component's; training_job.json names the one that applies (`pull_secret`).
    image_pull_secret: str | None = declare(
        S, "imagePullSecret", sh.PULL_SECRET_RULE, default=None, job=False
    )
    # Where the job goes and as whom: the cluster's business (the contract names the job).
    namespace: str | None = declare(
        S,
        "namespace",
        sh.str_rule(k8snames.LABEL_63, "a Kubernetes namespace name"),
        default=None,
        job=False,
    )
    service_account: str | None = declare(
        S,
        "serviceAccount",
        sh.str_rule(sh.K8S_NAME, "a Kubernetes service account name"),
        default=None,
        job=False,
    )
    # The ports reach the process as CUSTOM_PORTS (trainstack.contract.framework).
    advanced: Advanced = declare(
        S,
        "advanced",
        {"type": "dict"},
        factory=Advanced,
        load=Load.NESTED,
        nested=Advanced,
        job=False,
    )
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
