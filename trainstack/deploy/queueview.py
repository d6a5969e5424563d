"""`trainstack queue`: per team, the Workloads in its queue now — pending ones with their place
in line and Kueue's reason, admitted ones with the flavor they hold — read from the cluster the
environment's platform stack names (docs/queues.md), like `sky queue` or `arena top job`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainstack import platformnames as names
from trainstack.deploy.apijson import Reader
from trainstack.errors import UserError
from trainstack.texttable import Table, table


@dataclass(frozen=True)
class QueueRow:
    team: str
    workload: str
    state: str  # admitted, pending, preempted
    position: str  # "2 (3 in the ClusterQueue)", "" when admitted
    flavors: str  # the flavors an admitted one holds
    reason: str


def queue_rows(
    env: str,
    team: str | None = None,
    *,
    home: Path | None = None,
    backend: str | None = None,
    command: Any = None,
) -> list[QueueRow]:
    from trainstack.deploy import queueing
    from trainstack.deploy.kube import Cluster
    from trainstack.deploy.platform import cluster_access, read_stack_outputs
    from trainstack.deploy.settings import load_settings
    from trainstack.deploy.workspace import find_pulumi
    from trainstack.kueue import api
    from trainstack.platformnames import platform_stack_name

    cli = command or find_pulumi()
    settings = load_settings(home, backend)
    outputs = read_stack_outputs(settings, platform_stack_name(env), env, cli, show_secrets=False)
    queues = outputs.get(names.OUT_KUEUE_QUEUES)
    if not isinstance(queues, dict):
        raise UserError(
            f"environment {env!r} does not queue jobs: its platform exports no "
            f"{names.OUT_KUEUE_QUEUES}",
            hint="set kueue:version in its Pulumi.<env>.yaml and `pulumi up` the platform "
            "(docs/queues.md)",
        )
    from trainstack.infra.run.options import PlatformOutputs

    namespaces = dict(PlatformOutputs.read(outputs, env).namespaces)
    if team is not None and team not in namespaces:
        raise UserError(
            f"environment {env!r} has no team {team!r}",
            hint=f"teams: {', '.join(sorted(namespaces))}",
        )
    local_queue = str(queues.get("localQueue") or "")
    rows: list[QueueRow] = []
    for name in sorted(namespaces) if team is None else [team]:
        ns = namespaces[name]
        cluster = Cluster(cluster_access(settings, env, ns, cli, team=name))
        workloads = cluster.custom_objects(api.GROUP, "v1beta2", api.WORKLOADS, ns)
        summary = cluster.pending_workloads(ns, local_queue) if local_queue else None
        read = Reader(f"Workloads of {ns}")
        for i, raw in enumerate(workloads):
            wl = read.obj(raw, f"items[{i}]")
            state = queueing.workload_state(wl, Reader(f"Workload {ns} items[{i}]"))
            if _finished(wl, read, i):
                continue
            where = queueing.position(summary, state.workload, Reader(f"pending of {ns}"))
            rows.append(
                QueueRow(
                    team=name,
                    workload=state.workload,
                    state="admitted"
                    if state.admitted
                    else ("preempted" if state.preempted else "pending"),
                    position=""
                    if where is None
                    else f"{where[0]} ({where[1]} in the ClusterQueue)",
                    flavors=_flavors(wl, read, i) if state.admitted else "",
                    reason="; ".join(state.reasons),
                )
            )
    rows.sort(key=lambda r: (r.team, r.state != "admitted", r.position or "", r.workload))
    return rows


def _finished(wl: Any, read: Reader, i: int) -> bool:
    from trainstack.kueue import api

    status = read.obj(wl.get("status"), f"items[{i}].status")
    for j, raw in enumerate(read.items(status.get("conditions"), f"items[{i}].conditions")):
        cond = read.obj(raw, f"items[{i}].status.conditions[{j}]")
        if cond.get("type") == api.FINISHED and cond.get("status") == "True":
            return True
    return False


def _flavors(wl: Any, read: Reader, i: int) -> str:
    status = read.obj(wl.get("status"), f"items[{i}].status")
    admission = read.obj(status.get("admission"), f"items[{i}].status.admission")
    found: list[str] = []
    for j, raw in enumerate(read.items(admission.get("podSetAssignments"), f"items[{i}].psa")):
        psa = read.obj(raw, f"items[{i}].status.admission.podSetAssignments[{j}]")
        flavors = read.obj(psa.get("flavors"), f"items[{i}].podSetAssignments[{j}].flavors")
        found += [str(v) for v in flavors.values()]
    return ",".join(dict.fromkeys(found))


def queue_table(rows: list[QueueRow], env: str) -> Table:
    return table(
        ("team", "workload", "state", "position", "flavors", "reason"),
        [(r.team, r.workload, r.state, r.position, r.flavors, r.reason) for r in rows],
        title=f"queues of {env}" if rows else f"queues of {env}: nothing queued",
    )
