"""A deployed job's live state, read off the Kubernetes objects: typed, whatever the job kind.

Pure functions over the API's JSON (the job object and its pods), so they are tested with
recorded responses. What each kind reports:

- KubeDL jobs: ``status.conditions`` of type Created, Queuing, Running, Restarting, Succeeded,
  Failed; the last one that is True is the job's state (KubeDL v0.5.0
  pkg/job_controller/api/v1/types.go). Pods carry ``job-name``, ``replica-type`` (lower-case
  role) and ``replica-index`` labels (pkg/job_controller/api/v1/constants.go).
- ``custom`` (a batch/v1 Indexed Job): conditions Complete / Failed; pods carry ``job-name`` and
  the annotation ``batch.kubernetes.io/job-completion-index``; every replica is a ``worker``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KUBEDL_JOB_LABEL = "job-name"
KUBEDL_ROLE_LABEL = "replica-type"
KUBEDL_INDEX_LABEL = "replica-index"
BATCH_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
CUSTOM_ROLE = "worker"


class Outcome(enum.StrEnum):
    PENDING = "pending"  # created, no pod running yet (or the job object is not there yet)
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (Outcome.SUCCEEDED, Outcome.FAILED)


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str | None
    message: str | None
    since: str | None  # lastTransitionTime, as the API gives it


@dataclass(frozen=True, order=True)
class ReplicaState:
    role: str
    index: int
    pod: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    restarts: int  # container restarts in this pod (KubeDL recreates pods: see the job's count)
    exit_code: int | None  # the main container's last exit, None while it has not exited
    reason: str | None  # e.g. OOMKilled, Error, ImagePullBackOff


@dataclass(frozen=True)
class JobState:
    kind: str
    name: str
    namespace: str
    outcome: Outcome
    conditions: tuple[Condition, ...]
    replicas: tuple[ReplicaState, ...]
    message: str | None  # the deciding condition's message

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self.replicas)


def job_state(
    kind: str,
    name: str,
    namespace: str,
    job: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    container: str | None = None,
) -> JobState:
    """The state of job ``name``; ``job`` None: the object does not exist (yet, or any more)."""
    status: Mapping[str, Any] = (job or {}).get("status") or {}
    conditions = tuple(
        Condition(
            type=str(c.get("type")),
            status=str(c.get("status")),
            reason=c.get("reason"),
            message=c.get("message"),
            since=c.get("lastTransitionTime"),
        )
        for c in status.get("conditions") or []
    )
    replicas = tuple(sorted(_replica(p, kind, container) for p in pods))
    outcome, message = _outcome(kind, conditions, replicas)
    return JobState(
        kind=kind,
        name=name,
        namespace=namespace,
        outcome=outcome,
        conditions=conditions,
        replicas=replicas,
        message=message,
    )


def _outcome(
    kind: str, conditions: Sequence[Condition], replicas: Sequence[ReplicaState]
) -> tuple[Outcome, str | None]:
    true = [c for c in conditions if c.status == "True"]
    done = {"Succeeded": Outcome.SUCCEEDED, "Failed": Outcome.FAILED}
    if kind == "Job":  # batch/v1: Complete / Failed (SuccessCriteriaMet and FailureTarget precede)
        done = {"Complete": Outcome.SUCCEEDED, "Failed": Outcome.FAILED}
    for cond in reversed(true):  # conditions are appended in order; the last true one decides
        if cond.type in done:
            return done[cond.type], cond.message
    if any(r.phase == "Running" for r in replicas) or any(c.type == "Running" for c in true):
        return Outcome.RUNNING, None
    return Outcome.PENDING, true[-1].message if true else None


def _replica(pod: Mapping[str, Any], kind: str, container: str | None) -> ReplicaState:
    meta: Mapping[str, Any] = pod.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    if kind == "Job":
        role, index_text = CUSTOM_ROLE, annotations.get(BATCH_INDEX_ANNOTATION, "0")
    else:
        role, index_text = labels.get(KUBEDL_ROLE_LABEL, "?"), labels.get(KUBEDL_INDEX_LABEL, "0")
    status: Mapping[str, Any] = pod.get("status") or {}
    statuses: list[Mapping[str, Any]] = list(status.get("containerStatuses") or [])
    main = next((s for s in statuses if s.get("name") == container), None) or (
        statuses[0] if statuses else {}
    )
    exit_code, reason = _exit(main)
    if reason is None:
        waiting = (main.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason") or status.get("reason")
    return ReplicaState(
        role=role.lower(),
        index=int(index_text) if str(index_text).isdigit() else 0,
        pod=str(meta.get("name", "")),
        phase=str(status.get("phase", "Unknown")),
        restarts=sum(int(s.get("restartCount", 0)) for s in statuses),
        exit_code=exit_code,
        reason=reason,
    )


def _exit(container: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """The container's exit: its current state if terminated, else its last termination."""
    for key in ("state", "lastState"):
        terminated = (container.get(key) or {}).get("terminated")
        if terminated:
            return int(terminated.get("exitCode", 0)), terminated.get("reason")
    return None, None
