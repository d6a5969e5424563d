"""Why a queued job waits and where it stands, in Kueue's words (docs/queues.md), read off the
API's JSON (pure functions, tested with recorded responses):

- its Workload: a KubeDL job's pod group's is named after the job (trainstack.kueue.podgroup); a
  batch Job's or TrainJob's is owned by it. QuotaReserved False with Kueue's reason (waiting for
  quota, exceeds what the queue can ever hold, no matching flavor, ...) and message; Evicted and
  Preempted with whom it was preempted for; WaitingForReplacementPods (Kueue v0.19.2
  apis/kueue/v1beta2/workload_types.go:925-1049; trainstack.kueue.api);
- its place in line: the pending-workloads visibility API of its LocalQueue, positions counted
  from 0 (apis/visibility/v1beta2/types.go:66-80), shown from 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainstack.deploy.apijson import Reader
from trainstack.kueue import api
from trainstack.recovery import (
    EVICTED,  # also the name of Kueue's Workload condition
    PREEMPTED,
)
from trainstack.registry.model import Restart


@dataclass(frozen=True)
class QueueState:
    workload: str
    queue: str | None
    admitted: bool
    reasons: tuple[str, ...]
    position: tuple[int, int] | None = None  # (in the team's queue, in the ClusterQueue), from 1
    preempted: str | None = None  # by whom, when Kueue preempted it
    preempted_at: str | None = None  # the Preempted condition's lastTransitionTime
    preempted_message: str | None = None

    def lines(self) -> tuple[str, ...]:
        out = list(self.reasons)
        if self.position is not None:
            local, cluster = self.position
            out.append(
                f"Kueue: position {local} in its team's queue {self.queue} "
                f"({cluster} in the team's ClusterQueue)"
            )
        return tuple(out)


def find_workload(
    items: Sequence[Any], job: str, kind: str, read: Reader
) -> Mapping[str, Any] | None:
    """The job's Workload among a namespace's: named after the job (a pod group), else owned by
    it."""
    owned = None
    for i, raw in enumerate(items):
        wl = read.obj(raw, f"items[{i}]")
        meta = read.obj(wl.get("metadata"), f"items[{i}].metadata")
        if read.text(meta.get("name"), f"items[{i}].metadata.name") == job:
            return wl
        for j, ref in enumerate(read.items(meta.get("ownerReferences"), f"items[{i}].owners")):
            owner = read.obj(ref, f"items[{i}].metadata.ownerReferences[{j}]")
            if owner.get("kind") == kind and owner.get("name") == job:
                owned = wl
    return owned


def _conditions(wl: Mapping[str, Any], read: Reader) -> dict[str, Mapping[str, Any]]:
    status = read.obj(wl.get("status"), "status")
    out: dict[str, Mapping[str, Any]] = {}
    for i, raw in enumerate(read.items(status.get("conditions"), "status.conditions")):
        cond = read.obj(raw, f"status.conditions[{i}]")
        kind = read.text(cond.get("type"), f"status.conditions[{i}].type")
        if kind:
            out[kind] = cond
    return out


def _true(cond: Mapping[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _preemptor(message: str | None) -> str | None:
    """The preemptor's path out of Kueue's message ("...; preemptor path: /cohort/queue; ...")."""
    if not message or "preemptor path: " not in message:
        return None
    return message.split("preemptor path: ", 1)[1].split(";", 1)[0].strip() or None


def workload_state(wl: Mapping[str, Any], read: Reader) -> QueueState:
    meta = read.obj(wl.get("metadata"), "metadata")
    spec = read.obj(wl.get("spec"), "spec")
    name = read.text(meta.get("name"), "metadata.name") or "?"
    queue = read.text(spec.get("queueName"), "spec.queueName")
    conds = _conditions(wl, read)
    admitted = _true(conds.get(api.ADMITTED))
    reasons: list[str] = []
    preempted = preempted_at = preempted_message = None
    if _true(conds.get(api.PREEMPTED)) or (
        _true(conds.get(EVICTED)) and conds[EVICTED].get("reason") == api.PREEMPTED
    ):
        cond = conds.get(api.PREEMPTED) or conds[EVICTED]
        why = read.text(cond.get("reason"), "status.conditions[Preempted].reason") or ""
        message = read.text(cond.get("message"), "status.conditions[Preempted].message")
        words = api.PREEMPTION_REASONS.get(why, why or "Kueue")
        by = _preemptor(message)
        preempted = words + (f" (queue {by})" if by else "")
        preempted_at = read.text(cond.get("lastTransitionTime"), "status.conditions[Preempted].at")
        preempted_message = message
        reasons.append(f"Kueue preempted it for {preempted}; it waits in its queue again")
    reserved = conds.get(api.QUOTA_RESERVED)
    if not admitted and reserved is not None and reserved.get("status") == "False":
        reason = read.text(reserved.get("reason"), "status.conditions[QuotaReserved].reason")
        message = read.text(reserved.get("message"), "status.conditions[QuotaReserved].message")
        if reason != api.PREEMPTED or not preempted:
            words = api.QUOTA_REASONS.get(reason or "", "not admitted")
            reasons.append(f"Kueue: {words}" + (f" ({reason})" if reason else "") + _with(message))
    elif not admitted and reserved is None:
        reasons.append("Kueue: not yet considered by its queue")
    replacing = conds.get(api.WAITING_FOR_REPLACEMENT_PODS)
    if _true(replacing) and not preempted:
        message = read.text(replacing.get("message"), "status.conditions[Replacement].message")  # type: ignore[union-attr]
        reasons.append(
            "Kueue waits for replacement pods" + _with(message) + " (a KubeDL replica that "
            "fails is never replaced under Kueue: docs/queues.md)"
        )
    return QueueState(
        name,
        queue,
        admitted,
        tuple(reasons),
        preempted=preempted,
        preempted_at=preempted_at,
        preempted_message=preempted_message,
    )


def preemption(state: QueueState) -> Restart | None:
    """Kueue's preemption as the job's recovery history has it: the whole job, when Kueue
    evicted it, `preempted` (trainstack.recovery's word), not counted against
    `faultTolerance.maxRestarts` (KubeDL recreates deleted pods uncounted)."""
    from datetime import datetime

    if state.preempted is None or not state.preempted_at:
        return None
    try:
        at = datetime.fromisoformat(state.preempted_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    return Restart(
        at=at,
        role="job",
        index=0,
        exit_code=None,
        reason=PREEMPTED,
        detail=f"preempted by Kueue for {state.preempted}: {state.preempted_message or ''}"[:500],
        counted=False,
    )


def _with(message: str | None) -> str:
    return f": {message}" if message else ""


def position(
    summary: Mapping[str, Any] | None, workload: str, read: Reader
) -> tuple[int, int] | None:
    """Where the workload stands in its LocalQueue's pending list, counted from 1."""
    if not summary:
        return None
    for i, raw in enumerate(read.items(summary.get("items"), "items")):
        item = read.obj(raw, f"items[{i}]")
        meta = read.obj(item.get("metadata"), f"items[{i}].metadata")
        if read.text(meta.get("name"), f"items[{i}].metadata.name") != workload:
            continue
        local = read.int32(item.get(api.POSITION_IN_LOCAL_QUEUE, 0), f"items[{i}].local", minimum=0)
        cluster = read.int32(
            item.get(api.POSITION_IN_CLUSTER_QUEUE, 0), f"items[{i}].cluster", minimum=0
        )
        return local + 1, cluster + 1
    return None
