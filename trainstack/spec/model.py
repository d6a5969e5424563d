"""The typed spec model: what the loader returns and everything downstream consumes, and the
one declaration of every spec field (`declare`, trainstack.spec.fields): the schema, the loading
and training_job.json are read off these dataclasses. Adding a field to a spec is adding it
here (and using it).

All objects are frozen. Mappings are `FrozenMap`s (read-only, picklable, insertion-ordered) so that
iteration order — and therefore every rendered manifest — is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from trainstack import k8snames
from trainstack.kubedl.jobtype import JobType as JobType
from trainstack.spec import shapes as sh
from trainstack.spec.componentmodel import Code as Code
from trainstack.spec.componentmodel import CodeSource as CodeSource
from trainstack.spec.componentmodel import Component as Component
from trainstack.spec.componentmodel import Constraints as Constraints
from trainstack.spec.componentmodel import GitCode as GitCode
from trainstack.spec.componentmodel import InputChannel as InputChannel
from trainstack.spec.componentmodel import M, N, S, channel_name
from trainstack.spec.componentmodel import OutputChannel as OutputChannel
from trainstack.spec.componentmodel import Parameter as Parameter
from trainstack.spec.componentmodel import ParamValue as ParamValue
from trainstack.spec.componentmodel import Range as Range
from trainstack.spec.componentmodel import Scheme as Scheme
from trainstack.spec.enums import BindingMode as BindingMode
from trainstack.spec.enums import ParamType as ParamType
from trainstack.spec.enums import Scheduling as Scheduling
from trainstack.spec.fields import Load, declare

K = TypeVar("K")
V = TypeVar("V")


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
# trainstack.kubedl, and a Component's model in trainstack.spec.componentmodel; both are
# re-exported here for the model's users.


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
                    "name": channel_name(),
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
