"""A deployed run's job on its cluster: live state, waiting for its end, its pods' logs.

The job's coordinates (kind, name, namespace) come from the run's stack entry; the cluster's
credentials from the platform stack's current outputs (``deploy.platform.cluster_access``). What
is seen is also recorded: a finished job moves the run's registry record to succeeded/failed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from trainstack.deploy.apijson import Reader
from trainstack.deploy.index import StackEntry
from trainstack.deploy.jobstate import JobState, Outcome, ReplicaState, job_state
from trainstack.deploy.kube import Cluster
from trainstack.errors import NotFoundError, UserError

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class WaitTimeoutError(UserError):
    """``wait --timeout`` ran out before the job ended."""

    exit_code = 124  # as timeout(1)


class JobFailedError(UserError):
    """The job ended in failure (``wait`` exits 1)."""

    exit_code = 1


@dataclass(frozen=True)
class JobRef:
    api_version: str
    kind: str
    name: str
    namespace: str
    container: str | None

    @classmethod
    def of(cls, entry: StackEntry) -> JobRef:
        out = entry.outputs
        missing = [k for k in ("kind", "jobName", "namespace", "apiVersion") if not out.get(k)]
        if missing:
            raise UserError(
                f"run {entry.run!r}: its stack records no {', '.join(missing)}",
                hint="deploy it again with this trainstack",
            )
        kind = str(out["kind"])
        return cls(
            api_version=str(out["apiVersion"]),
            kind=kind,
            name=str(out["jobName"]),
            namespace=str(out["namespace"]),
            container=container_of(kind),
        )


def container_of(kind: str) -> str | None:
    """The main container of a job kind's pods (the one KubeDL injects its env into; a
    TrainJob's node container)."""
    from trainstack.kubedl import KINDS
    from trainstack.trainer import TRAINJOB_KIND
    from trainstack.trainer.runtimes import NODE

    if kind == TRAINJOB_KIND:
        return NODE
    return next((k.container for k in KINDS.values() if k.kind == kind), None)


def connect(entry: StackEntry, settings: DeploySettings, command: auto.PulumiCommand) -> Cluster:
    from trainstack.deploy.platform import cluster_access, entry_source

    source = entry_source(settings, entry, command)
    namespace = JobRef.of(entry).namespace
    return Cluster(cluster_access(settings, entry.env, namespace, command, source, entry.team))


def read_state(cluster: Cluster, job: JobRef) -> JobState:
    from trainstack.deploy.jobstate import current_attempt, pod_selector, with_jobset
    from trainstack.trainer import JOBSET, TRAINJOB_KIND
    from trainstack.trainer.jobset import JOBSET_PLURAL

    obj = cluster.job(job.api_version, job.kind, job.namespace, job.name)
    listed = cluster.pods(job.namespace, job.name, pod_selector(job.kind, job.name))
    pods = current_attempt(job.kind, listed)
    state = job_state(job.kind, job.name, job.namespace, obj, pods, job.container)
    state = replace(_with_lifetimes(state, job, listed), created=_created(obj, job))
    if job.kind == TRAINJOB_KIND:  # the JobSet, named after the TrainJob, knows its restarts
        group, _, version = JOBSET.api_version.partition("/")
        jobset = cluster.custom_object(group, version, JOBSET_PLURAL, job.namespace, job.name)
        state = with_jobset(state, jobset)
    return with_waiting(cluster, job, state, pods)


def _with_lifetimes(state: JobState, job: JobRef, listed: list[Any]) -> JobState:
    """Every listed pod's lifetime: an earlier attempt's pods still being deleted hold their
    nodes too."""
    from trainstack.deploy.podlives import observe

    every = state
    if len(listed) != len(state.replicas):
        every = job_state(job.kind, job.name, job.namespace, None, listed, job.container)
    return replace(state, lifetimes=observe(listed, every.replicas, time.time()))


def _created(obj: Any, job: JobRef) -> float | None:
    """The job object's creationTimestamp: where a deployed run's queue wait begins."""
    from trainstack.deploy.recovery import parse_time

    if obj is None:
        return None
    read = Reader(f"{job.kind} {job.namespace}/{job.name}")
    meta = read.obj(read.obj(obj, "").get("metadata"), "metadata")
    return parse_time(read.text(meta.get("creationTimestamp"), "metadata.creationTimestamp"))


def with_waiting(cluster: Cluster, job: JobRef, state: JobState, pods: list[Any]) -> JobState:
    """The state with why it waits (trainstack.deploy.waiting), asked of the cluster only while
    something waits: the job is pending or one of its pods is."""
    from trainstack.deploy import waiting

    if state.outcome.finished or (
        state.outcome is Outcome.RUNNING and all(r.phase != "Pending" for r in state.replicas)
    ):
        return state
    read = Reader(f"pods of {job.namespace}/{job.name}")
    labels = {r.pod: f"{r.role}-{r.index}" for r in state.replicas}
    reasons: list[str] = []
    for i, pod in enumerate(pods):
        name = read.obj(pod, f"items[{i}]").get("metadata", {}).get("name")
        reasons += waiting.pod_reasons(pod, labels.get(str(name), str(name)), f"items[{i}]", read)
    events = cluster.events(job.namespace, job.kind, job.name)
    reasons += waiting.event_reasons(events, Reader(f"events of {job.namespace}/{job.name}"))
    gang = waiting.gang_group(pods, job.name, read)
    if gang is not None:
        (api, name) = gang
        group = cluster.custom_object(*api, job.namespace, name)
        reasons += waiting.podgroup_reasons(group, name, Reader(f"PodGroup {job.namespace}/{name}"))
    queued, preempted = queue_reasons(cluster, job)
    reasons += queued
    why = tuple(dict.fromkeys(reasons))
    message = "; ".join(why) if why and state.outcome is Outcome.PENDING else state.message
    return replace(state, waiting=why, message=message, preempted=preempted)


def queue_reasons(cluster: Cluster, job: JobRef) -> tuple[list[str], Any]:
    """Kueue's word on the job (trainstack.deploy.queueing), where its Workloads are served:
    why it is not admitted, whom it was preempted for, and its place in line."""
    from trainstack.deploy import queueing
    from trainstack.kueue import api

    workloads = cluster.custom_objects(api.GROUP, "v1beta2", api.WORKLOADS, job.namespace)
    if not workloads:
        return [], None
    read = Reader(f"Workloads of {job.namespace}")
    wl = queueing.find_workload(workloads, job.name, job.kind, read)
    if wl is None:
        return [], None
    state = queueing.workload_state(wl, Reader(f"Workload of {job.namespace}/{job.name}"))
    if not state.admitted and state.queue:
        summary = cluster.pending_workloads(job.namespace, state.queue)
        where = queueing.position(
            summary, state.workload, Reader(f"pending workloads of {job.namespace}")
        )
        state = replace(state, position=where)
    return list(state.lines()), queueing.preemption(state)


def record(settings: DeploySettings, entry: StackEntry, state: JobState) -> None:
    """Put what the cluster says into this user's registry record of the run (if it has one:
    a teammate's run is not in this registry)."""
    from trainstack.registry import Registry, ReplicaExit, RunStatus

    if entry.registry_id is None:
        return
    from trainstack.deploy.recovery import restarts

    exits = [ReplicaExit(r.role, r.index, r.exit_code) for r in state.replicas]
    with Registry.open(settings.home) as registry, suppress(NotFoundError):
        registry.get(entry.registry_id)  # NotFoundError: not in this registry
        for restart in restarts(state):  # kept once however often status reads it
            registry.record_restart(entry.registry_id, restart)
        if state.preempted is not None:  # Kueue preempted the whole job
            registry.record_restart(entry.registry_id, state.preempted)
        if state.outcome.finished:
            status = RunStatus.SUCCEEDED if state.outcome is Outcome.SUCCEEDED else RunStatus.FAILED
            registry.finish(
                entry.registry_id,
                status,
                exits=exits,
                restarts=state.restarts,
                reason=state.message,
            )
        else:
            # A run still waiting keeps why as its reason (cleared once nothing waits).
            registry.record_progress(
                entry.registry_id,
                exits=exits,
                restarts=state.restarts,
                reason="; ".join(state.waiting) or None,
            )


def wait(
    cluster: Cluster,
    job: JobRef,
    *,
    timeout: float | None,
    interval: float = 10.0,
    on_change: Callable[[JobState], None] | None = None,
    on_poll: Callable[[JobState], None] | None = None,
    clock: Clock = time.monotonic,
    sleep: Sleep = time.sleep,
) -> JobState:
    """Poll until the job succeeds or fails; ``WaitTimeoutError`` after ``timeout`` seconds.
    `on_change`: each reading that differs from the last; `on_poll`: each other one."""
    deadline = None if timeout is None else clock() + timeout
    last: tuple[object, ...] | None = None
    while True:
        state = read_state(cluster, job)
        summary = (
            state.outcome,
            tuple((r.role, r.index, r.phase, r.restarts) for r in state.replicas),
            state.waiting,
        )
        if on_change is not None and summary != last:
            on_change(state)
        elif on_poll is not None:
            on_poll(state)
        last = summary
        if state.outcome.finished:
            return state
        if deadline is not None and clock() >= deadline:
            raise WaitTimeoutError(
                f"job {job.namespace}/{job.name} is still {state.outcome} after {timeout:g}s",
                hint="wait again, or raise --timeout",
            )
        pause = interval if deadline is None else max(0.0, min(interval, deadline - clock()))
        sleep(pause)


def select(state: JobState, role: str | None, index: int | None) -> list[ReplicaState]:
    """The replicas ``--role``/``--index`` name (all of them when neither is given)."""
    chosen = [
        r
        for r in state.replicas
        if (role is None or r.role == role.lower()) and (index is None or r.index == index)
    ]
    if chosen:
        return chosen
    have = ", ".join(f"{r.role}-{r.index}" for r in state.replicas) or "none yet"
    raise NotFoundError(
        f"job {state.namespace}/{state.name} has no pod for "
        f"{role or 'any role'}{'' if index is None else f' index {index}'}",
        hint=f"its replicas: {have}",
    )


def stream_logs(
    cluster: Cluster,
    job: JobRef,
    replicas: list[ReplicaState],
    *,
    follow: bool,
    tail: int | None,
    write: Callable[[bytes], None],
) -> None:
    """One replica: its log as is. Several: each line prefixed with ``role-index | `` (one
    reader thread per pod when following, so a quiet pod does not hold the others back)."""
    if len(replicas) == 1:
        for chunk in cluster.log(
            job.namespace, replicas[0].pod, job.container, follow=follow, tail=tail
        ):
            write(chunk)
        return
    if not follow:
        for r in replicas:
            for line in _lines(
                cluster.log(job.namespace, r.pod, job.container, follow=False, tail=tail)
            ):
                write(f"{r.role}-{r.index} | ".encode() + line)
        return
    lines: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=1000)

    def read(r: ReplicaState) -> None:
        try:
            for line in _lines(
                cluster.log(job.namespace, r.pod, job.container, follow=True, tail=tail)
            ):
                lines.put(f"{r.role}-{r.index} | ".encode() + line)
        except BaseException as err:  # handed to the writer, which raises it
            lines.put(err)
        finally:
            lines.put(None)

    threads = [threading.Thread(target=read, args=(r,), daemon=True) for r in replicas]
    for t in threads:
        t.start()
    open_streams = len(threads)
    while open_streams:
        item = lines.get()
        if item is None:
            open_streams -= 1
        elif isinstance(item, BaseException):
            raise item
        else:
            write(item)


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending + b"\n"


def wait_for_pods(
    cluster: Cluster, job: JobRef, *, interval: float = 2.0, sleep: Sleep = time.sleep
) -> JobState:
    """``logs --follow`` of a job whose pods are not there yet: poll until they are."""
    while True:
        state = read_state(cluster, job)
        if state.replicas or state.outcome.finished:
            return state
        sleep(interval)
