"""A stack's ``Context`` from its environment's config and the platform's outputs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainstack import platformnames as names
from trainstack.policy.model import ContainerDefaults, Context, NodePool, TeamQuota
from trainstack.policy.pods import amount

UNKNOWN = names.PLAN_UNKNOWN


def _known(value: Any) -> Any:
    return None if value in (None, "", UNKNOWN, "[secret]") else value


def _teams(values: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = values.get(f"{names.PLATFORM_PROJECT}:teams") or []
    if isinstance(raw, str):
        raw = json.loads(raw)
    return [t for t in raw if isinstance(t, Mapping) and t.get("name")]


def build_context(env: str, values: Mapping[str, Any], outputs: Mapping[str, Any]) -> Context:
    from trainstack.infra.platform import config_teams as cfg

    quotas: dict[str, TeamQuota] = {}
    for team in _teams(values):
        q = team.get("quota") or {}
        quotas[str(team["name"])] = TeamQuota(
            cpu=amount(q.get("cpu", 0)),
            memory=amount(q.get("memory", 0)),
            gpus=int(amount(q.get("gpu", 0))),
            pods=None if q.get("pods") is None else int(amount(q["pods"])),
            storage=amount(q.get("storage", cfg.DEFAULT_STORAGE)),
            claims=int(amount(q.get("persistentVolumeClaims", cfg.DEFAULT_CLAIMS))),
            ephemeral_storage=amount(q.get("ephemeralStorage", cfg.DEFAULT_EPHEMERAL_STORAGE)),
            limit_ephemeral_storage=amount(
                q.get("limitEphemeralStorage", cfg.DEFAULT_LIMIT_EPHEMERAL_STORAGE)
            ),
        )
    queues = _queues(outputs.get(names.OUT_KUEUE_QUEUES))
    if queues is not None:
        # Kueue's ceiling is the team's ResourceQuota (infra/platform/queues.py): the most it
        # may hold, its own quota plus what it may borrow.
        from dataclasses import replace

        from trainstack.infra.platform.queues import CPU, GPU, MEMORY, QueueModel

        model = QueueModel.from_output(queues)
        for name in list(quotas) if model is not None else ():
            if model is not None and name in model.teams:
                quotas[name] = replace(
                    quotas[name],
                    cpu=model.ceiling(name, CPU),
                    memory=model.ceiling(name, MEMORY),
                    gpus=int(model.ceiling(name, GPU)),
                )
    from trainstack.infra.run.options import PlatformOutputs, oss_endpoint_of

    platform = PlatformOutputs.read(outputs, env)
    pools = outputs.get(names.OUT_NODE_POOLS)
    buckets = outputs.get("buckets")
    return Context(
        env=env,
        mode=platform.mode.value,
        region=_known(platform.region),
        registry=_known(outputs.get(names.OUT_REGISTRY)),
        buckets=tuple(sorted(str(b) for b in buckets.values()))
        if isinstance(buckets, Mapping)
        else (),
        nas_server=_known(outputs.get("nasServer")),
        node_pools=None
        if not isinstance(pools, list)
        else tuple(
            NodePool(
                name=str(p["name"]),
                labels=dict(p.get("labels") or {}),
                taints=tuple(
                    (str(t["key"]), str(t.get("value", "")), str(t["effect"]))
                    for t in p.get("taints") or ()
                ),
                cpu=amount(p.get("cpu") or 0),
                memory=amount(p.get("memory") or 0),
                gpus=int(p.get("gpus") or 0),
                sized=p.get("cpu") is not None,
                max_size=None if p.get("maxSize") is None else int(p["maxSize"]),
                instance_types=tuple(str(t) for t in p.get("instanceTypes") or ()),
            )
            for p in pools
        ),
        namespaces=dict(platform.namespaces),
        team_max_priority=dict(platform.team_max_priority),
        quotas=quotas,
        host_path_volumes=platform.host_path_volumes,
        team_roles=dict(platform.oss_auth.team_roles),
        oss_endpoint=oss_endpoint_of(platform),
        oss_secret=platform.oss_auth.secret_name,
        oss_secret_teams=platform.oss_auth.secret_teams,
        team_defaults=_team_defaults(outputs.get(names.OUT_TEAM_DEFAULTS)),
        gang_scheduler=_known(outputs.get(names.OUT_GANG_SCHEDULER)),
        queues=_queues(outputs.get(names.OUT_KUEUE_QUEUES)),
    )


def _queues(raw: Any) -> Mapping[str, Any] | None:
    """``kueueQueues`` when it holds a usable model (an odd one: no queue checks)."""
    from trainstack.infra.platform.queues import QueueModel

    return raw if QueueModel.from_output(raw) is not None else None


def _team_defaults(raw: Any) -> dict[str, ContainerDefaults]:
    """``teamDefaults``; {} from a platform stack that predates the output (a role without
    requests then counts as asking for nothing, as before)."""
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(team): ContainerDefaults(
            amount(d.get("cpu", 0)),
            amount(d.get("memory", 0)),
            amount(d.get("limitCpu", 0)),
            amount(d.get("limitMemory", 0)),
            amount(d.get("ephemeralStorage", 0)),
            amount(d.get("limitEphemeralStorage", 0)),
        )
        for team, d in raw.items()
        if isinstance(d, Mapping)
    }
