"""A deployed job's live state, read off the Kubernetes objects: typed, whatever the job kind.

Pure functions over the API's JSON (the job object and its pods), so they are tested with
recorded responses. What each kind reports:

- KubeDL jobs: ``status.conditions`` of type Created, Queuing, Running, Restarting, Succeeded,
  Failed; the last one that is True is the job's state (KubeDL v0.5.0
  pkg/job_controller/api/v1/types.go). Pods carry ``job-name``, ``replica-type`` (lower-case
  role) and ``replica-index`` labels (pkg/job_controller/api/v1/constants.go).
- ``custom`` (a batch/v1 Indexed Job): conditions Complete / Failed; pods carry ``job-name`` and
  the annotation ``batch.kubernetes.io/job-completion-index``; every replica is a ``worker``.
- A Kubeflow Trainer ``TrainJob``: conditions Complete / Failed, copied from its JobSet's
  Completed / Failed with their reasons (ReachedMaxRestarts, FailedJobs, DeadlineExceeded; Trainer
  v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go:438-457); its pods carry the JobSet's
  ``jobset.sigs.k8s.io/jobset-name`` (not ``job-name``: each replicated job is a Job of its own),
  the replicated job's name (the role, ``node``; an MPI run's pods their trainstack role,
  ``launcher`` or ``worker``) and the completion index (the node rank). A
  whole-set restart bumps the JobSet's ``status.restarts`` and labels the new pods with it
  (``jobset.sigs.k8s.io/restart-attempt``); the old attempt's pods are being deleted and are not
  the job's replicas any more (JobSet v0.12.0 pkg/controllers/jobset_controller.go:365-376).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trainstack.deploy.apijson import Reader
from trainstack.kubedl.pods import (
    COMPLETION_INDEX_ANNOTATION,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
)
from trainstack.platformnames import ROLE_LABEL
from trainstack.trainer import TRAINJOB_KIND
from trainstack.trainer.jobset import (
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
    RESTARTING_CONDITION,
)

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
class Termination:
    """A container's previous run (`lastState.terminated`): the one restart in place the API
    still shows (the kubelet keeps only the last)."""

    exit_code: int | None
    reason: str | None  # OOMKilled, Error, Completed, ...
    message: str | None  # the termination log: the launcher's final reason (`hung: ...`)
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True, order=True)
class ReplicaState:
    role: str
    index: int
    pod: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    restarts: int  # container restarts in this pod (KubeDL recreates pods: see the job's count)
    exit_code: int | None  # the main container's last exit, None while it has not exited
    reason: str | None  # e.g. OOMKilled, Error, ImagePullBackOff
    last: Termination | None = None  # the main container's previous run, if it restarted


@dataclass(frozen=True)
class JobState:
    kind: str
    name: str
    namespace: str
    outcome: Outcome
    conditions: tuple[Condition, ...]
    replicas: tuple[ReplicaState, ...]
    message: str | None  # the deciding condition's message
    # Why it waits, in the cluster's words (trainstack.deploy.waiting): the scheduler, the
    # kubelet, the job controller's refusals, the gang scheduler. Empty when nothing waits.
    waiting: tuple[str, ...] = ()
    # A TrainJob's whole-set restarts (its JobSet's status.restarts): every pod was recreated.
    set_restarts: int = 0
    # Kueue preempted the whole job (trainstack.deploy.queueing): its recovery history's entry,
    # a trainstack.registry.model.Restart; None when it did not.
    preempted: Any = None
    # Every scheduled pod's lifetime as listed now, all restart attempts' (a
    # trainstack.metrics.podtimes.PodLife each): what a deployed run's cost is computed from.
    lifetimes: tuple[Any, ...] = ()
    # When the job object was created (its metadata.creationTimestamp): where its queue wait
    # begins. None where the job object is not there.
    created: float | None = None

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self.replicas) + self.set_restarts


def pod_selector(kind: str, name: str) -> str:
    """The label selector of job ``name``'s pods."""
    if kind == TRAINJOB_KIND:
        return f"{JOBSET_NAME_LABEL}={name}"
    return f"job-name={name}"


def current_attempt(kind: str, pods: Sequence[Any]) -> list[Any]:
    """A TrainJob's pods of its JobSet's latest restart attempt (the others are being deleted);
    every pod of any other kind."""
    if kind != TRAINJOB_KIND:
        return list(pods)

    def attempt(pod: Any) -> int:
        meta = pod.get("metadata") if isinstance(pod, Mapping) else None
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        value = labels.get(RESTART_ATTEMPT_LABEL) if isinstance(labels, Mapping) else None
        return int(value) if isinstance(value, str) and value.isdigit() else 0

    latest = max((attempt(p) for p in pods), default=0)
    return [p for p in pods if attempt(p) == latest]


def job_state(
    kind: str,
    name: str,
    namespace: str,
    job: Mapping[str, Any] | None,
    pods: Sequence[Any],
    container: str | None = None,
) -> JobState:
    """The state of job ``name``; ``job`` None: the object does not exist (yet, or any more).
    A field of the wrong type is an ``AnswerError`` naming it (trainstack.deploy.apijson)."""
    read = Reader(f"{kind} {namespace}/{name}")
    status = read.obj(read.obj(job, "").get("status"), "status")
    conditions = tuple(
        _condition(read, read.obj(c, f"status.conditions[{i}]"), f"status.conditions[{i}]")
        for i, c in enumerate(read.items(status.get("conditions"), "status.conditions"))
    )
    read_pods = Reader(f"pods of {namespace}/{name}")
    replicas = tuple(
        sorted(
            _replica(read_pods, read_pods.obj(p, f"items[{i}]"), f"items[{i}]", kind, container)
            for i, p in enumerate(pods)
        )
    )
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


def _condition(read: Reader, c: Mapping[str, Any], at: str) -> Condition:
    return Condition(
        type=str(read.text(c.get("type"), f"{at}.type")),
        status=str(read.text(c.get("status"), f"{at}.status")),
        reason=read.text(c.get("reason"), f"{at}.reason"),
        message=read.text(c.get("message"), f"{at}.message"),
        since=read.text(c.get("lastTransitionTime"), f"{at}.lastTransitionTime"),
    )


def _outcome(
    kind: str, conditions: Sequence[Condition], replicas: Sequence[ReplicaState]
) -> tuple[Outcome, str | None]:
    true = [c for c in conditions if c.status == "True"]
    done = {"Succeeded": Outcome.SUCCEEDED, "Failed": Outcome.FAILED}
    # batch/v1: Complete / Failed (SuccessCriteriaMet and FailureTarget precede); a TrainJob the
    # same words (Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:56-66)
    if kind in ("Job", TRAINJOB_KIND):
        done = {"Complete": Outcome.SUCCEEDED, "Failed": Outcome.FAILED}
    for cond in reversed(true):  # conditions are appended in order; the last true one decides
        if cond.type in done:
            return done[cond.type], cond.message
    if any(r.phase == "Running" for r in replicas) or any(c.type == "Running" for c in true):
        return Outcome.RUNNING, None
    return Outcome.PENDING, true[-1].message if true else None


def _replica(
    read: Reader, pod: Mapping[str, Any], at: str, kind: str, container: str | None
) -> ReplicaState:
    meta = read.obj(pod.get("metadata"), f"{at}.metadata")
    labels = read.obj(meta.get("labels"), f"{at}.metadata.labels")
    annotations = read.obj(meta.get("annotations"), f"{at}.metadata.annotations")
    role: str | None
    if kind == "Job":
        role = CUSTOM_ROLE
        key, where = (
            COMPLETION_INDEX_ANNOTATION,
            f"{at}.metadata.annotations.{COMPLETION_INDEX_ANNOTATION}",
        )
        index = read.index(annotations.get(key, "0"), where)
    elif kind == TRAINJOB_KIND:
        # trainstack labels every pod template it renders with the role its replicas run as: an
        # MPI run's own runtime's `launcher` job is the launcher, its `node` job the workers; on
        # a shared runtime the role is the replicated job (`node`), whose name the pod carries.
        label = ROLE_LABEL if labels.get(ROLE_LABEL) is not None else REPLICATED_JOB_LABEL
        role = read.text(labels.get(label), f"{at}.metadata.labels.{label}")
        where = f"{at}.metadata.annotations.{COMPLETION_INDEX_ANNOTATION}"
        index = read.index(annotations.get(COMPLETION_INDEX_ANNOTATION, "0"), where)
    else:
        role = read.text(
            labels.get(REPLICA_TYPE_LABEL), f"{at}.metadata.labels.{REPLICA_TYPE_LABEL}"
        )
        where = f"{at}.metadata.labels.{REPLICA_INDEX_LABEL}"
        index = read.index(labels.get(REPLICA_INDEX_LABEL, "0"), where)
    status = read.obj(pod.get("status"), f"{at}.status")
    listed = read.items(status.get("containerStatuses"), f"{at}.status.containerStatuses")
    statuses = [read.obj(s, f"{at}.status.containerStatuses[{i}]") for i, s in enumerate(listed)]
    main_at = next(
        (i for i, s in enumerate(statuses) if s.get("name") == container), 0 if statuses else None
    )
    main = statuses[main_at] if main_at is not None else {}
    exit_code, reason = _exit(read, main, f"{at}.status.containerStatuses[{main_at}]")
    if reason is None:
        state = read.obj(main.get("state"), f"{at}.status.containerStatuses[{main_at}].state")
        waiting = read.obj(state.get("waiting"), "state.waiting")
        reason = read.text(waiting.get("reason"), "state.waiting.reason") or read.text(
            status.get("reason"), f"{at}.status.reason"
        )
    restarts = sum(
        read.int32(
            s.get("restartCount", 0), f"{at}.status.containerStatuses[{i}].restartCount", minimum=0
        )
        for i, s in enumerate(statuses)
    )
    return ReplicaState(
        role=(role or "?").lower(),
        index=index,
        pod=str(read.text(meta.get("name"), f"{at}.metadata.name") or ""),
        phase=str(read.text(status.get("phase"), f"{at}.status.phase") or "Unknown"),
        restarts=restarts,
        exit_code=exit_code,
        reason=reason,
        last=_last(read, main, f"{at}.status.containerStatuses[{main_at}].lastState.terminated"),
    )


def _last(read: Reader, container: Mapping[str, Any], at: str) -> Termination | None:
    last = read.obj(container.get("lastState"), at.rsplit(".", 1)[0])
    terminated = read.obj(last.get("terminated"), at)
    if not terminated:
        return None
    return Termination(
        exit_code=read.int32(terminated.get("exitCode"), f"{at}.exitCode"),
        reason=read.text(terminated.get("reason"), f"{at}.reason"),
        message=read.text(terminated.get("message"), f"{at}.message"),
        started_at=read.text(terminated.get("startedAt"), f"{at}.startedAt"),
        finished_at=read.text(terminated.get("finishedAt"), f"{at}.finishedAt"),
    )


def _exit(read: Reader, container: Mapping[str, Any], at: str) -> tuple[int | None, str | None]:
    """The container's exit: its current state if terminated, else its last termination."""
    for key in ("state", "lastState"):
        terminated = read.obj(
            read.obj(container.get(key), f"{at}.{key}").get("terminated"), f"{at}.{key}.terminated"
        )
        if terminated:
            code = read.int32(terminated.get("exitCode"), f"{at}.{key}.terminated.exitCode")
            return code, read.text(terminated.get("reason"), f"{at}.{key}.terminated.reason")
    return None, None


def with_jobset(state: JobState, jobset: Mapping[str, Any] | None) -> JobState:
    """A TrainJob's state with what only its JobSet says: how often the whole set restarted
    (`status.restarts`) and, while it restarts or after, the RestartingJobSet condition naming the
    Job whose failure restarted it. None: the JobSet is not there (yet, or deleted by a TTL)."""
    if jobset is None:
        return state
    read = Reader(f"JobSet {state.namespace}/{state.name}")
    status = read.obj(read.obj(jobset, "").get("status"), "status")
    count = read.int32(status.get("restarts", 0), "status.restarts", minimum=0)
    conditions = tuple(
        _condition(read, read.obj(c, f"status.conditions[{i}]"), f"status.conditions[{i}]")
        for i, c in enumerate(read.items(status.get("conditions"), "status.conditions"))
    )
    restarting = tuple(c for c in conditions if c.type == RESTARTING_CONDITION)
    return replace(state, set_restarts=count, conditions=state.conditions + restarting)
