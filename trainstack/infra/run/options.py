"""From the platform stack's outputs to the renderer's options: where a run goes on that cluster.

This is the one place that knows both sides of the contract: the outputs the platform program
exports (``trainstack.platformnames``) and the ``RenderOptions`` the renderer takes. The outputs
are read once, into a typed ``PlatformOutputs``; nothing past ``PlatformOutputs.read`` looks a
key up in the raw mapping. Secret outputs are never needed here (they arrive as ``[secret]`` and
are not read).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trainstack import platformnames as names
from trainstack.errors import ConfigError, UserError
from trainstack.infra.configread import did_you_mean
from trainstack.infra.platform.config_oss import team_key_commands
from trainstack.render import RenderOptions
from trainstack.spec.model import Run
from trainstack.trainer.backend import DEFAULT_OPERATOR, Operator, parse_operator


class PlatformMode(enum.Enum):
    """How the platform reaches its cluster (the platform config's ``mode``)."""

    ACK = "ack"  # Alibaba Cloud ACK, created by the platform
    KUBECONFIG = "kubeconfig"  # an existing cluster (kind, minikube, any conformant one)


class OssAuthType(enum.Enum):
    """How OSS volumes authenticate (the ``ossAuth`` output's ``type``)."""

    RRSA = names.OSS_AUTH_RRSA
    SECRET = names.OSS_AUTH_SECRET
    NONE = names.OSS_AUTH_NONE


@dataclass(frozen=True)
class OssAuth:
    type: OssAuthType
    role_name: str | None = None
    secret_name: str | None = None
    # RRSA: team -> the team's own role, which its static PVs must name (volumeguard.py).
    team_roles: Mapping[str, str] = field(default_factory=dict)
    # SECRET: the teams whose namespace holds the Secret (their own key); None: every team (a
    # platform from before per-team keys).
    secret_teams: tuple[str, ...] | None = None

    def secret_of(self, team: str | None) -> str | None:
        """The AccessKey Secret a team's OSS volumes name; None: the team has none."""
        if self.type is not OssAuthType.SECRET:
            return None
        if self.secret_teams is not None and team not in self.secret_teams:
            return None
        return self.secret_name


@dataclass(frozen=True)
class PlatformOutputs:
    """The platform stack outputs a run reads, typed."""

    mode: PlatformMode
    region: str | None
    oss_endpoint: str | None
    oss_auth: OssAuth
    namespaces: Mapping[str, str]  # team -> namespace
    team_max_priority: Mapping[str, int]  # team -> highest priority its namespace admits
    pull_secret: str | None
    artifact_store: str | None  # as exported; checked by infra.run.artifacts
    # file:// bindings render as hostPath: only where team namespaces admit them. A platform
    # that does not export the flag predates Pod Security labels: its kubeconfig mode did.
    host_path_volumes: bool = False
    # The operator that runs its jobs; a platform that does not export one runs KubeDL.
    operator: Operator = DEFAULT_OPERATOR
    # The LocalQueue of every team namespace where Kueue queues jobs (kueueQueues); None: none.
    queue: str | None = None

    @property
    def cloud(self) -> bool:
        return self.mode is PlatformMode.ACK

    @classmethod
    def read(cls, outputs: Mapping[str, Any] | PlatformOutputs, env: str) -> PlatformOutputs:
        if isinstance(outputs, PlatformOutputs):
            return outputs
        # Anything but "ack" is a cluster trainstack did not create (as it always was read).
        mode = PlatformMode.ACK if outputs.get("mode") == "ack" else PlatformMode.KUBECONFIG
        return cls(
            mode=mode,
            region=_text(outputs.get("region")),
            oss_endpoint=_text(outputs.get(names.OUT_OSS_ENDPOINT)),
            oss_auth=_oss_auth(outputs, mode, env),
            namespaces=MappingProxyType(
                {str(k): str(v) for k, v in _object(outputs, names.OUT_NAMESPACES, env).items()}
            ),
            team_max_priority=MappingProxyType(
                {
                    str(k): _whole(v, names.OUT_TEAM_MAX_PRIORITY, env)
                    for k, v in _object(outputs, names.OUT_TEAM_MAX_PRIORITY, env).items()
                }
            ),
            # "": the platform's pods pull without a Secret; absent (an older platform): its
            # default name.
            pull_secret=_text(outputs.get(names.OUT_PULL_SECRET, names.PULL_SECRET_NAME)),
            artifact_store=_text(outputs.get(names.OUT_ARTIFACT_STORE)),
            host_path_volumes=bool(
                outputs.get(names.OUT_HOST_PATH_VOLUMES, mode is PlatformMode.KUBECONFIG)
            ),
            operator=parse_operator(
                outputs.get(names.OUT_OPERATOR),
                source=f"the platform of {env!r}",
                key=f"output {names.OUT_OPERATOR}",
            ),
            queue=_local_queue(outputs, env),
        )


def _local_queue(outputs: Mapping[str, Any], env: str) -> str | None:
    raw = outputs.get(names.OUT_KUEUE_QUEUES)
    if raw is None:
        return None
    name = raw.get("localQueue") if isinstance(raw, Mapping) else None
    if not isinstance(name, str) or not name:
        raise _odd_output(names.OUT_KUEUE_QUEUES, env, "an object without its localQueue")
    return name


def _odd_output(key: str, env: str, what: str) -> UserError:
    return UserError(
        f"the platform of {env!r} exports {key} as {what}",
        hint="the platform stack was written by another trainstack version: `pulumi up` it "
        "with this one",
    )


def _object(outputs: Mapping[str, Any], key: str, env: str) -> Mapping[Any, Any]:
    """An output that must be a JSON object (absent: empty)."""
    value = outputs.get(key) or {}
    if not isinstance(value, Mapping):
        raise _odd_output(key, env, f"a {type(value).__name__}, not an object of teams")
    return value


def _whole(value: Any, key: str, env: str) -> int:
    # Config read back from the CLI may hold numbers as text: "4" is 4.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise _odd_output(key, env, f"holding {value!r}, not a whole number")
    return int(value)


def _text(value: Any) -> str | None:
    """An output's text; None for a missing or empty one."""
    return str(value) if value else None


def _oss_auth(outputs: Mapping[str, Any], mode: PlatformMode, env: str) -> OssAuth:
    auth: dict[str, Any] = dict(outputs.get(names.OUT_OSS_AUTH) or {})
    if auth.get("type") is None:  # a platform deployed before it exported ossAuth
        role = _text(outputs.get(names.OUT_JOBS_ROLE))
        if mode is PlatformMode.ACK and role:
            return OssAuth(OssAuthType.RRSA, role_name=role)
        return OssAuth(OssAuthType.NONE)
    kind = next((k for k in OssAuthType if k.value == auth["type"]), None)
    typed = OssAuth(
        kind or OssAuthType.NONE,
        role_name=_text(auth.get("roleName")),
        secret_name=_text(auth.get("secretName")),
        team_roles=MappingProxyType(
            {str(k): str(v) for k, v in dict(auth.get("teamRoles") or {}).items() if v}
        ),
        secret_teams=None if auth.get("teams") is None else tuple(str(t) for t in auth["teams"]),
    )
    if (
        kind is None
        or (kind is OssAuthType.RRSA and not typed.role_name)
        or (kind is OssAuthType.SECRET and not typed.secret_name)
    ):
        raise ConfigError(
            f"environment {env!r}: the platform's {names.OUT_OSS_AUTH} output is "
            f"{auth!r}, which this trainstack cannot read",
            hint="deploy the platform and the run with the same trainstack version",
        )
    return typed


def run_namespace(outputs: Mapping[str, Any] | PlatformOutputs, run: Run, env: str) -> str:
    """The team namespace the run goes to: its own ``namespace``, else its ``team`` tag's."""
    namespaces = PlatformOutputs.read(outputs, env).namespaces
    where = f"environment {env!r}"
    if not namespaces:
        raise ConfigError(
            f"{where} exports no team namespaces",
            hint="deploy the platform stack (pulumi up) before its runs",
        )
    if run.namespace:
        if run.namespace not in namespaces.values():
            raise ConfigError(
                f"{_source(run)}: spec.namespace: {run.namespace!r} is not a team namespace of "
                f"{where}",
                hint=f"team namespaces: {', '.join(sorted(namespaces.values()))}",
            )
        return run.namespace
    team = run.tags.get(names.TEAM_TAG)
    if team is None:
        if len(namespaces) == 1:
            return next(iter(namespaces.values()))
        raise ConfigError(
            f"{_source(run)}: metadata.tags.team: the run names no team, and {where} has several",
            hint=f"teams: {', '.join(sorted(namespaces))}",
        )
    if team not in namespaces:
        raise ConfigError(
            f"{_source(run)}: metadata.tags.team: {team!r} is not a team of {where}",
            hint=did_you_mean(team, namespaces) or f"teams: {', '.join(sorted(namespaces))}",
        )
    return namespaces[team]


def render_options(
    outputs: Mapping[str, Any] | PlatformOutputs, run: Run, env: str
) -> RenderOptions:
    """The options a run of ``env`` renders with, read off the platform's outputs."""
    platform = PlatformOutputs.read(outputs, env)
    namespace = run_namespace(platform, run, env)
    team = next((t for t, ns in sorted(platform.namespaces.items()) if ns == namespace), None)
    oss_secret, oss_role, oss_hint = oss_credentials(platform, env, team)
    check_priority(platform, run, namespace, env)
    return RenderOptions(
        namespace=namespace,
        # file:// bindings only make sense on a cluster that runs on this machine, and only
        # where the team namespace's Pod Security level admits hostPath volumes.
        local_cluster=platform.host_path_volumes and not platform.cloud,
        oss_endpoint=oss_endpoint_of(platform),
        oss_secret=oss_secret,
        oss_ram_role=oss_role,
        oss_credentials_hint=oss_hint,
        pull_secret=platform.pull_secret,
        operator=platform.operator,
        queue=platform.queue,
    )


def oss_endpoint_of(platform: PlatformOutputs) -> str:
    """The OSS endpoint a run's volumes name when their URI names none: the platform's
    (ossEndpoint; older platforms exported only region), else the renderer's default."""
    if platform.oss_endpoint:
        return platform.oss_endpoint
    if platform.cloud and platform.region:
        return f"oss-{platform.region}-internal.aliyuncs.com"
    return RenderOptions().oss_endpoint


def check_priority(
    outputs: Mapping[str, Any] | PlatformOutputs, run: Run, namespace: str, env: str
) -> None:
    """A priority above the team's cap would deploy a job whose pods the quota refuses."""
    platform = PlatformOutputs.read(outputs, env)
    caps = platform.team_max_priority
    teams = {ns: team for team, ns in platform.namespaces.items()}
    team = teams.get(namespace)
    if run.priority is None or team is None or team not in caps:
        return
    if run.priority > int(caps[team]):
        raise ConfigError(
            f"{_source(run)}: spec.priority: {run.priority} is above the maxPriority of team "
            f"{team!r}, {caps[team]} in environment {env!r}; its pods would be refused",
            hint=f"use a priority of at most {caps[team]}, or raise the team's maxPriority in "
            f"Pulumi.{env}.yaml",
        )


def oss_credentials(
    outputs: Mapping[str, Any] | PlatformOutputs, env: str, team: str | None = None
) -> tuple[str | None, str | None, str | None]:
    """(Secret name, RAM role, hint) for OSS volumes: exactly what the platform provides.

    ack: the team's RAM role through RRSA (on a platform from before per-team roles, the jobs
    role). kubeconfig mode: the Secret holding the team's own AccessKey, or nothing — then a run
    that binds oss:// fails to render with ``hint`` instead of naming a Secret that does not exist.
    """
    auth = PlatformOutputs.read(outputs, env).oss_auth  # complete: read() checks it
    if auth.type is OssAuthType.RRSA:
        return None, auth.team_roles.get(team or "", auth.role_name), None
    secret = auth.secret_of(team)
    if secret is not None:
        return secret, None, None
    whose = f"team {team!r} of environment {env!r}" if team else f"environment {env!r}"
    return (
        None,
        None,
        (
            f"{whose} has no OSS credentials; give the team an AccessKey of its own (its RAM "
            "policy: the platform's teamOssPolicies output, docs/platform.md): "
            + team_key_commands(env, team or "<team>")
            + f"; then `pulumi up --stack {env}` (the cluster needs Alibaba Cloud's OSS CSI "
            "driver), or bind nas://, pvc:// or file:// instead"
        ),
    )


def _source(run: Run) -> str:
    return str(run.source) if run.source else run.name
