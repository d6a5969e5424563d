"""A run → the typed context of each resource the templates render, in apply order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainstack.contract import Topology, config_files, job_name, run_base_env
from trainstack.render.code import plan_code
from trainstack.render.kinds import KINDS, Kind
from trainstack.render.meta import labels_and_annotations
from trainstack.render.options import RenderOptions
from trainstack.render.parts import (
    Claim,
    ConfigMap,
    Mount,
    PersistentVolume,
    PodParts,
    Replica,
)
from trainstack.render.placement import priority_class
from trainstack.render.pod import EXIT_CODE_RETRYABLE, replica
from trainstack.render.storage import Storage
from trainstack.spec.model import JobType, Run


@dataclass(frozen=True)
class RunPolicy:
    """KubeDL's run policy (inline in spec, under spec.runPolicy for MPIJob)."""

    clean_pod_policy: str = "Running"  # finished pods stay for their logs; PS pods go
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: dict[str, str] | None = None


@dataclass(frozen=True)
class Job:
    kind: Kind
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    run_policy: RunPolicy
    replicas: tuple[Replica, ...]
    slots_per_worker: int | None = None  # MPIJob
    main_container: str | None = None  # MPIJob
    completions: int | None = None  # batch/v1 Job (custom)
    pod_failure_policy: dict[str, Any] | None = None  # batch/v1 Job (custom)
    backoff_limit: int | None = None  # batch/v1 Job (custom): 0 without fault tolerance


@dataclass(frozen=True)
class Resources:
    volumes: tuple[PersistentVolume, ...]
    claims: tuple[Claim, ...]
    config_maps: tuple[ConfigMap, ...]
    job: Job


def build(run: Run, options: RenderOptions) -> Resources:
    kind = KINDS[run.job_type]
    job = job_name(run.name)
    ns = run.namespace or options.namespace
    labels, annotations = labels_and_annotations(run, job)
    parts = PodParts()
    storage = Storage(run, job, ns, labels, options, parts)
    plan_code(run, job, storage, parts, options)
    storage.plan()
    topology = Topology.cluster(run, ns, job)
    config = ConfigMap(f"{job}-config", ns, dict(labels), data=config_files(run, topology))
    parts.volumes.append({"name": "config", "configMap": {"name": config.name}})
    parts.mounts.append(Mount("config", "/ml/input/config", True))
    if options.metrics is not None:  # persisted: the platform's artifact store
        storage.attach(options.metrics, "metrics", "/ml/metrics", read_only=False,
                       download=False)
    else:
        parts.volumes.append({"name": "metrics", "emptyDir": {}})
        parts.mounts.append(Mount("metrics", "/ml/metrics"))
    env = run_base_env(run, job_name=job, framework_names=kind.injected)
    replicas = tuple(replica(run, role, kind, job, env, labels, parts, options)
                     for role in run.resources)
    if run.job_type is JobType.CUSTOM:
        replicas = replicas[:1]  # one role: an Indexed Job of all replicas
    return Resources(
        volumes=tuple(parts.volumes_beside), claims=tuple(parts.claims),
        config_maps=(config, *parts.config_maps),
        job=Job(kind, job, ns, labels, {**annotations, **parts.annotations},
                _run_policy(run, options), replicas, **_extra(run, replicas)))


def _run_policy(run: Run, options: RenderOptions) -> RunPolicy:
    return RunPolicy(
        ttl_seconds_after_finished=options.ttl_seconds_after_finished,
        active_deadline_seconds=run.timeout_seconds,
        backoff_limit=run.fault_tolerance.max_restarts if run.fault_tolerance else None,
        scheduling_policy={"priorityClassName": cls} if (cls := priority_class(run)) else None)


def _extra(run: Run, replicas: tuple[Replica, ...]) -> dict[str, Any]:
    if run.job_type is JobType.MPI:
        worker = run.resources.get("worker")
        return {"slots_per_worker": max(1, worker.gpu if worker else 1), "main_container": "mpi"}
    if run.job_type is JobType.CUSTOM:
        ft = run.fault_tolerance
        extra: dict[str, Any] = {"completions": run.total_replicas,
                                 "backoff_limit": ft.max_restarts if ft else 0}
        if replicas and replicas[0].restart_policy == "ExitCode":
            # KubeDL's ExitCode policy in plain Kubernetes: any other exit code fails the Job.
            extra["pod_failure_policy"] = {"rules": [{"action": "FailJob", "onExitCodes": {
                "containerName": KINDS[JobType.CUSTOM].container, "operator": "NotIn",
                "values": list(EXIT_CODE_RETRYABLE)}}]}
        return extra
    return {}
