"""The typed objects every rule sees: a ``Resource``, the stack's ``Context``, a ``Finding``.

A rule never sees where a resource came from: ``trainstack plan``'s mocks, the manifests
``deploy`` is about to register, or CrossGuard's ``ResourceValidationArgs`` all become the same
``Resource``, which is why the offline check and the policy pack cannot disagree.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainstack.infra.headroom import NODE_HEADROOM as _HEADROOM


class Level(enum.Enum):
    """CrossGuard's enforcement levels (``pulumi_policy.EnforcementLevel`` values)."""

    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Resource:
    type: str  # the Pulumi type token, e.g. kubernetes:core/v1:PersistentVolume
    name: str  # the Pulumi resource name
    props: Mapping[str, Any]  # the inputs, as the provider receives them (camelCase)
    protect: bool = False
    project: str = ""  # the Pulumi project: the platform's, or the run stacks'

    @staticmethod
    def project_of(urn: str) -> str:
        """``urn:pulumi:<stack>::<project>::<type>::<name>`` -> project."""
        parts = urn.split("::")
        return parts[1] if len(parts) >= 4 else ""


@dataclass(frozen=True)
class NodePool:
    """One node pool's shape: what a pod must tolerate, match and fit into."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    cpu: float  # cores per node
    memory: float  # bytes per node
    gpus: int  # GPUs per node
    sized: bool = True  # False: an instance type's shape is unknown; any request fits
    max_size: int | None = None  # the most nodes the pool may have; None: not exported
    instance_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class TeamQuota:
    cpu: float  # cores
    memory: float  # bytes
    gpus: int
    pods: int | None = None  # the quota's `pods`, when the team sets one
    # requests.storage and persistentvolumeclaims, requests/limits.ephemeral-storage (bytes);
    # None: not known (a Context from before they were quoted)
    storage: float | None = None
    claims: int | None = None
    ephemeral_storage: float | None = None
    limit_ephemeral_storage: float | None = None


@dataclass(frozen=True)
class ContainerDefaults:
    """What a team's LimitRange gives a container that states no requests or limits."""

    cpu: float  # cores requested
    memory: float  # bytes requested
    limit_cpu: float
    limit_memory: float
    ephemeral_storage: float = 0.0  # requested
    limit_ephemeral_storage: float = 0.0


# The fit check's figure (trainstack.infra.headroom): one source.
NODE_HEADROOM = _HEADROOM


@dataclass(frozen=True)
class TeamBudget:
    """A team's budget (trainstack:teams[].budget) with what this machine's registry says it
    spent in the window (trainstack.metrics.spending), and the rates a money budget prices at."""

    limit: float
    unit: str  # gpuHours, or amount (in `currency`)
    per: str  # the window: 30d, 4w, 24h
    spent: float
    runs: int  # the team's runs in the window in this machine's registry
    unpriced: int  # of them, those with no record of their cost
    why_unpriced: str = ""  # why, for the deployed ones (their stores not readable here, ...)
    currency: str | None = None
    vcpu_hour: float = 0.0
    memory_gib_hour: float = 0.0
    gpu_hour: float = 0.0

    @property
    def remaining(self) -> float:
        return max(0.0, self.limit - self.spent)


@dataclass(frozen=True)
class Context:
    """The stack's environment: its config and the platform's outputs, as rules need them."""

    env: str
    mode: str  # "ack" or "kubeconfig"
    region: str | None = None
    registry: str | None = None
    buckets: tuple[str, ...] = ()
    nas_server: str | None = None  # None when unknown (before the platform exists)
    node_pools: tuple[NodePool, ...] | None = None  # None: the platform does not say
    namespaces: Mapping[str, str] = field(default_factory=dict)  # team -> namespace
    team_max_priority: Mapping[str, int] = field(default_factory=dict)
    quotas: Mapping[str, TeamQuota] = field(default_factory=dict)  # team -> quota
    # Team namespaces admit hostPath volumes (the platform's hostPathVolumes output).
    host_path_volumes: bool = False
    team_roles: Mapping[str, str] = field(default_factory=dict)  # team -> its OSS RAM role
    oss_endpoint: str | None = None  # the endpoint OSS volumes render with; None: unknown
    oss_secret: str | None = None  # kubeconfig mode: the AccessKey Secret OSS volumes name
    # kubeconfig mode: the teams whose namespace holds that Secret; None: every team's does
    oss_secret_teams: tuple[str, ...] | None = None
    # team -> its LimitRange's container defaults (teamDefaults); absent: counted as none
    team_defaults: Mapping[str, ContainerDefaults] = field(default_factory=dict)
    gang_scheduler: str | None = None  # KubeDL's gang scheduler, None when none (or unknown)
    # A Kueue environment's queues, as the platform exports them (kueueQueues); None: no queues.
    queues: Mapping[str, Any] | None = None
    budgets: Mapping[str, TeamBudget] = field(default_factory=dict)  # team -> its budget
    # The run's component's median duration in this machine's registry and how many runs that
    # is of: what a job without a timeout is projected at (None: no such runs, or no run).
    typical_seconds: tuple[float, int] | None = None

    @property
    def local(self) -> bool:
        """A cluster reached by kubeconfig (kind, minikube): host access is the user's own."""
        return self.mode != "ack"

    def team_of(self, namespace: str | None) -> str | None:
        for team, ns in self.namespaces.items():
            if ns == namespace:
                return team
        return None

    def oss_secret_of(self, team: str) -> str | None:
        """The AccessKey Secret team's OSS volumes name (kubeconfig mode); None: it has none."""
        if self.oss_secret_teams is not None and team not in self.oss_secret_teams:
            return None
        return self.oss_secret

    def defaults_of(self, namespace: str | None) -> ContainerDefaults | None:
        """The LimitRange defaults of the team owning ``namespace``."""
        team = self.team_of(namespace)
        return self.team_defaults.get(team) if team else None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str | Mapping[str, Any]) -> Context:
        raw = json.loads(text) if isinstance(text, str) else dict(text)
        pools = raw.get("node_pools")
        return Context(
            env=raw["env"],
            mode=raw["mode"],
            region=raw["region"],  # always written
            registry=raw.get("registry"),
            buckets=tuple(raw.get("buckets", ())),
            nas_server=raw.get("nas_server"),
            node_pools=None
            if pools is None
            else tuple(
                NodePool(
                    name=p["name"],
                    labels=dict(p["labels"]),
                    taints=tuple((str(k), str(v), str(e)) for k, v, e in p["taints"]),
                    cpu=float(p["cpu"]),
                    memory=float(p["memory"]),
                    gpus=int(p["gpus"]),
                    sized=bool(p.get("sized", True)),
                    max_size=None if p.get("max_size") is None else int(p["max_size"]),
                    instance_types=tuple(str(t) for t in p.get("instance_types", ())),
                )
                for p in pools
            ),
            namespaces=dict(raw.get("namespaces", {})),
            team_max_priority={k: int(v) for k, v in raw.get("team_max_priority", {}).items()},
            quotas={
                k: TeamQuota(
                    cpu=float(q["cpu"]),
                    memory=float(q["memory"]),
                    gpus=int(q["gpus"]),
                    pods=None if q.get("pods") is None else int(q["pods"]),
                    **{
                        f: None if q.get(f) is None else float(q[f])
                        for f in ("storage", "ephemeral_storage", "limit_ephemeral_storage")
                    },
                    claims=None if q.get("claims") is None else int(q["claims"]),
                )
                for k, q in raw.get("quotas", {}).items()
            },
            host_path_volumes=bool(raw.get("host_path_volumes", raw["mode"] != "ack")),
            team_roles=dict(raw.get("team_roles", {})),
            oss_endpoint=raw.get("oss_endpoint") or None,
            oss_secret=raw.get("oss_secret") or None,
            oss_secret_teams=None
            if raw.get("oss_secret_teams") is None
            else tuple(str(t) for t in raw["oss_secret_teams"]),
            team_defaults={
                k: ContainerDefaults(
                    float(d["cpu"]),
                    float(d["memory"]),
                    float(d["limit_cpu"]),
                    float(d["limit_memory"]),
                    float(d.get("ephemeral_storage", 0.0)),
                    float(d.get("limit_ephemeral_storage", 0.0)),
                )
                for k, d in raw.get("team_defaults", {}).items()
            },
            gang_scheduler=raw.get("gang_scheduler") or None,
            queues=raw.get("queues") or None,
            budgets={k: TeamBudget(**b) for k, b in raw.get("budgets", {}).items()},
            typical_seconds=None
            if raw.get("typical_seconds") is None
            else (float(raw["typical_seconds"][0]), int(raw["typical_seconds"][1])),
        )


@dataclass(frozen=True)
class Finding:
    """What a rule found on one resource: the field, the value found, how to fix it."""

    field: str
    found: str
    fix: str


@dataclass(frozen=True)
class Violation:
    rule: str
    level: Level
    resource: str  # "type::name"
    field: str
    found: str
    fix: str
    description: str

    @property
    def message(self) -> str:
        return (
            f"[{self.level.value}] {self.rule}: {self.resource}: {self.field}: {self.found}. "
            f"fix: {self.fix}"
        )

    def to_json(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "level": self.level.value,
            "resource": self.resource,
            "field": self.field,
            "found": self.found,
            "fix": self.fix,
            "description": self.description,
        }


Check = Callable[[Resource, Context, Mapping[str, Any]], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    """One rule: its id, what it checks, its default level and configuration, the check."""

    id: str
    description: str
    level: Level
    defaults: Mapping[str, Any]
    check: Check
    # Pulumi type tokens (or prefixes ending in ':') the rule looks at; empty: every type.
    types: tuple[str, ...] = ()

    def applies(self, type_: str) -> bool:
        return not self.types or any(
            type_ == t or (t.endswith(":") and type_.startswith(t)) for t in self.types
        )


@dataclass(frozen=True)
class Report:
    target: str  # a run file, or "platform"
    env: str
    violations: tuple[Violation, ...] = field(default_factory=tuple)

    @property
    def mandatory(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.level is Level.MANDATORY)
