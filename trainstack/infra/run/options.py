"""From the platform stack's outputs to the renderer's options: where a run goes on that cluster.

This is the one place that knows both sides of the contract: the outputs the platform program
exports (``trainstack.infra.names``) and the ``RenderOptions`` the renderer takes. Secret outputs
are never needed here (they arrive as ``[secret]`` and are not read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from trainstack.errors import ConfigError
from trainstack.infra import names
from trainstack.infra.configread import did_you_mean
from trainstack.infra.platform.config import OSS_ACCESS_KEY_KEYS
from trainstack.render import RenderOptions
from trainstack.spec.model import Run

TEAM_TAG = "team"
# The environment a shipped run is written for (its sizes, buckets and team); a convention the
# examples follow and their test reads, not a restriction: any run plans on any environment it fits.
ENV_TAG = "env"


def run_namespace(outputs: Mapping[str, Any], run: Run, env: str) -> str:
    """The team namespace the run goes to: its own ``namespace``, else its ``team`` tag's."""
    namespaces: dict[str, str] = dict(outputs.get(names.OUT_NAMESPACES) or {})
    where = f"environment {env!r}"
    if not namespaces:
        raise ConfigError(f"{where} exports no team namespaces",
                          hint="deploy the platform stack (pulumi up) before its runs")
    if run.namespace:
        if run.namespace not in namespaces.values():
            raise ConfigError(
                f"{_source(run)}: spec.namespace: {run.namespace!r} is not a team namespace of "
                f"{where}", hint=f"team namespaces: {', '.join(sorted(namespaces.values()))}")
        return run.namespace
    team = run.tags.get(TEAM_TAG)
    if team is None:
        if len(namespaces) == 1:
            return next(iter(namespaces.values()))
        raise ConfigError(f"{_source(run)}: metadata.tags.team: the run names no team, and "
                          f"{where} has several", hint=f"teams: {', '.join(sorted(namespaces))}")
    if team not in namespaces:
        raise ConfigError(f"{_source(run)}: metadata.tags.team: {team!r} is not a team of {where}",
                          hint=did_you_mean(team, namespaces)
                          or f"teams: {', '.join(sorted(namespaces))}")
    return namespaces[team]


def for_environment(outputs: Mapping[str, Any], run: Run, env: str
                    ) -> tuple[Run, RenderOptions]:
    """The run as it goes to ``env`` (unbound outputs placed in the artifact store) and the
    options it renders with: what ``deploy``, ``plan RUN`` and ``render --env`` all use."""
    from trainstack.infra.run.artifacts import (
        METRICS_DIR,
        artifact_store,
        persist_outputs,
        place,
        team_of,
    )

    options = render_options(outputs, run, env)
    store = artifact_store(outputs, env)
    team = team_of(outputs, options.namespace)
    completed = persist_outputs(run, store, team, env)
    if store is not None:
        options = replace(options, metrics=place(store, team, run.name, METRICS_DIR))
    return completed, options


def render_options(outputs: Mapping[str, Any], run: Run, env: str) -> RenderOptions:
    """The options a run of ``env`` renders with, read off the platform's outputs."""
    defaults = RenderOptions()
    cloud = outputs.get("mode") == "ack"
    region = outputs.get("region")
    oss_secret, oss_role, oss_hint = oss_credentials(outputs, env)
    namespace = run_namespace(outputs, run, env)
    check_priority(outputs, run, namespace, env)
    return RenderOptions(
        namespace=namespace,
        # file:// bindings only make sense on a cluster that runs on this machine.
        local_cluster=not cloud,
        # The platform names its endpoint (ossEndpoint); older platforms exported only region.
        oss_endpoint=outputs.get(names.OUT_OSS_ENDPOINT)
        or (f"oss-{region}-internal.aliyuncs.com" if cloud and region else defaults.oss_endpoint),
        oss_secret=oss_secret,
        oss_ram_role=oss_role,
        oss_credentials_hint=oss_hint,
        pull_secret=outputs.get(names.OUT_PULL_SECRET) or defaults.pull_secret,
    )


def check_priority(outputs: Mapping[str, Any], run: Run, namespace: str, env: str) -> None:
    """A priority above the team's cap would deploy a job whose pods the quota refuses."""
    caps: dict[str, int] = dict(outputs.get(names.OUT_TEAM_MAX_PRIORITY) or {})
    teams = {ns: team for team, ns in dict(outputs.get(names.OUT_NAMESPACES) or {}).items()}
    team = teams.get(namespace)
    if run.priority is None or team is None or team not in caps:
        return
    if run.priority > int(caps[team]):
        raise ConfigError(
            f"{_source(run)}: spec.priority: {run.priority} is above the maxPriority of team "
            f"{team!r}, {caps[team]} in environment {env!r}; its pods would be refused",
            hint=f"use a priority of at most {caps[team]}, or raise the team's maxPriority in "
                 f"Pulumi.{env}.yaml")


def oss_credentials(outputs: Mapping[str, Any], env: str
                    ) -> tuple[str | None, str | None, str | None]:
    """(Secret name, RAM role, hint) for OSS volumes: exactly what the platform provides.

    ack: the jobs RAM role through RRSA (the StorageClass uses the same). kubeconfig mode: the
    AccessKey Secret the platform created in every team namespace, or nothing — then a run that
    binds oss:// fails to render with ``hint`` instead of naming a Secret that does not exist.
    """
    auth: dict[str, Any] = dict(outputs.get(names.OUT_OSS_AUTH) or {})
    kind = auth.get("type")
    if kind is None:  # a platform deployed before it exported ossAuth
        role = outputs.get(names.OUT_JOBS_ROLE)
        kind = names.OSS_AUTH_RRSA if outputs.get("mode") == "ack" and role else names.OSS_AUTH_NONE
        auth = {"type": kind, "roleName": role}
    if kind == names.OSS_AUTH_RRSA and auth.get("roleName"):
        return None, str(auth["roleName"]), None
    if kind == names.OSS_AUTH_SECRET and auth.get("secretName"):
        return str(auth["secretName"]), None, None
    if kind == names.OSS_AUTH_NONE:
        return None, None, (
            f"environment {env!r} has no OSS credentials; give its platform an AccessKey: "
            + "; ".join(f"pulumi config set --secret trainstack:{k} <{k}> --stack {env}"
                        for k in OSS_ACCESS_KEY_KEYS)
            + f"; then `pulumi up --stack {env}` (the cluster needs Alibaba Cloud's OSS CSI "
              "driver), or bind nas://, pvc:// or file:// instead")
    raise ConfigError(f"environment {env!r}: the platform's {names.OUT_OSS_AUTH} output is "
                      f"{auth!r}, which this trainstack cannot read",
                      hint="deploy the platform and the run with the same trainstack version")


def _source(run: Run) -> str:
    return str(run.source) if run.source else run.name
