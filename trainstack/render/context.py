"""A run → the typed context of each resource the templates render, in apply order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainstack import launcher
from trainstack.contract import Topology, config_files, job_name, run_base_env
from trainstack.contract.framework import mpi_slots_per_worker
from trainstack.contract.shell import uses_launcher
from trainstack.kubedl import (
    CLEAN_POD_POLICY,
    RETRYABLE_EXIT_CODES,
    JobKind,
    RunPolicyPlace,
    job_kind,
)
from trainstack.kubedl.restart import backoff_limit
from trainstack.render.code import plan_code
from trainstack.render.meta import labels_and_annotations
from trainstack.render.mpiruntime import (
    MPITrainJob,
    TrainingRuntime,
    mpi_train_job,
    training_runtime,
)
from trainstack.render.options import RenderError, RenderOptions
from trainstack.render.parts import (
    ML,
    Access,
    Claim,
    ConfigMap,
    Meta,
    Mount,
    PersistentVolume,
    PodParts,
    Replica,
    combine,
)
from trainstack.render.placement import priority_class
from trainstack.render.pod import replica
from trainstack.render.queue import grouped, queued_labels
from trainstack.render.storage import Storage, check_unique_names
from trainstack.render.trainjob import TrainJob, train_job, trainer_topology
from trainstack.spec.model import JobType, Run
from trainstack.trainer import RUNTIMES, Operator, runtime
from trainstack.trainer.runtimes import why_not

# trainstack's own ConfigMap (hyperparameters.json, training_job.json): a name no operator
# object has (KubeDL's MPI controller owns `<job>-config`: trainstack.kubedl).
CONFIG_MAP_SUFFIX = "-trainstack-config"
LAUNCHER_MAP_SUFFIX = "-trainstack-launcher"
LAUNCHER_VOLUME = "trainstack-launcher"
HOME_VOLUME = "trainstack-home"
# What `kubexec.sh` (kubectl exec into the workers) needs; KubeDL grants it to no one.
# KubeDL v0.5.0 controllers/mpi/mpi_config.go (newJobConfigMap), config/rbac/
EXEC_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
]


def _launcher_parts(
    run: Run, job: str, ns: str, labels: dict[str, str], *, ships_logs: bool
) -> PodParts:
    """trainstack's in-container launcher (trainstack.launcher), every command-running pod's
    first process: one ConfigMap beside the job holding `launcher.py` and the module it imports,
    mounted read-only at /ml/launcher/, run by the image's python3
    (contract.shell.launch_command, uses_launcher)."""
    if not any(
        uses_launcher(run, role, ships_logs=ships_logs, in_pod=True) for role in run.resources
    ):
        return PodParts()
    cm = ConfigMap(job + LAUNCHER_MAP_SUFFIX, ns, dict(labels), data=launcher.program_files())
    return PodParts(
        volumes=({"name": LAUNCHER_VOLUME, "configMap": {"name": cm.name}},),
        mounts=(Mount(LAUNCHER_VOLUME, ML.launcher, True),),
        config_maps=(cm,),
    )


@dataclass(frozen=True)
class RunPolicy:
    """KubeDL's run policy (inline in spec, under spec.runPolicy for MPIJob)."""

    # finished pods stay for their logs; PS pods go (trainstack.kubedl.CLEAN_POD_POLICY)
    clean_pod_policy: str = CLEAN_POD_POLICY
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: dict[str, str] | None = None


@dataclass(frozen=True)
class Job:
    kind: JobKind
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

    @property
    def template(self) -> str:
        return self.kind.template


@dataclass(frozen=True)
class Resources:
    volumes: tuple[PersistentVolume, ...]
    claims: tuple[Claim, ...]
    config_maps: tuple[ConfigMap, ...]
    access: tuple[Access, ...]
    job: Job | TrainJob | MPITrainJob
    # An MPI run's own TrainingRuntime on Kubeflow Trainer, created before its TrainJob.
    runtime: TrainingRuntime | None = None


def build(run: Run, options: RenderOptions) -> Resources:
    kind = job_kind(run.job_type)
    job = job_name(run.name)
    ns = run.namespace or options.namespace
    labels, annotations = labels_and_annotations(run, job)
    storage = Storage(run, job, ns, labels, options)
    # On Kubeflow Trainer a run of a type it has a runtime for is a TrainJob; `custom` stays a
    # Job on either backend; any other is refused here too, whoever renders it (deploy, a sweep's
    # trials), not only by plan's check.
    trainer = options.operator is Operator.TRAINER and run.job_type in RUNTIMES
    if options.operator is Operator.TRAINER and (why := why_not(JobType(run.job_type))):
        raise RenderError(
            f"{run.source or run.name}: a {run.job_type} job cannot run on Kubeflow Trainer: {why}",
            hint="deploy it to an environment whose trainstack:operator is kubedl",
        )
    topology = trainer_topology(run, ns, job) if trainer else Topology.cluster(run, ns, job)
    config = ConfigMap(job + CONFIG_MAP_SUFFIX, ns, dict(labels), data=config_files(run, topology))
    config_parts = PodParts(
        volumes=({"name": "config", "configMap": {"name": config.name}},),
        mounts=(Mount("config", ML.config, True),),
    )
    if options.metrics is not None:  # persisted: the platform's artifact store
        metrics = storage.attach(
            options.metrics, "metrics", ML.metrics, read_only=False, download=False
        )
    else:
        metrics = PodParts(
            volumes=({"name": "metrics", "emptyDir": {}},), mounts=(Mount("metrics", ML.metrics),)
        )
    # HOME for a user the image does not know (contract.shell.prelude): written by the command,
    # so on disk and counted against the pod's ephemeral storage like any emptyDir.
    home = PodParts(
        volumes=({"name": HOME_VOLUME, "emptyDir": {}},), mounts=(Mount(HOME_VOLUME, ML.home),)
    )
    logs = PodParts()
    if options.logs is not None:  # shipped: the launcher tees each replica's log into the store
        logs = storage.attach(options.logs, "logs", ML.logs, read_only=False, download=False)
    # The order here is the order of volumes, mounts and copy steps in every pod.
    parts = combine(
        [
            plan_code(run, job, storage, options),
            storage.plan(),
            config_parts,
            metrics,
            home,
            logs,
            _launcher_parts(run, job, ns, labels, ships_logs=options.logs is not None),
        ]
    )
    check_unique_names(run, parts)
    env = run_base_env(run, job_name=job)
    # On Trainer the MPI launcher reaches its workers over SSH, never by kubectl exec.
    access = None if trainer else _exec_access(run, kind, job, ns, labels)
    accounts = {kind.exec_role: access.service_account} if access and kind.exec_role else {}
    replicas = tuple(
        replica(
            run,
            role,
            kind,
            job,
            env,
            labels,
            parts,
            options,
            service_account=accounts.get(role, run.service_account),
        )
        for role in run.resources
    )
    if kind.replicas_key is None:
        replicas = replicas[:1]  # one role: an Indexed Job of all replicas
    # A TrainJob is queued as itself (Kueue's trainjob integration), its pods never as a group.
    replicas = grouped(run, kind, job, replicas, None if trainer else options.queue)
    job_labels = queued_labels(labels, options.queue)
    job_annotations = {**annotations, **parts.annotations}
    if kind.readiness_annotation is not None:
        # trainstack's AIMaster is the user's command, which knows nothing of KubeDL's
        # handshake: mark the job ready up front so the operator creates the workers (once the
        # AIMaster is Running, by its DAG condition).
        key, value = kind.readiness_annotation
        job_annotations[key] = value
    own = None
    built: Job | TrainJob | MPITrainJob
    if trainer and runtime(run.job_type).per_run:
        own = training_runtime(
            run, runtime(run.job_type), job, ns, dict(labels), replicas, mpi_slots_per_worker(run)
        )
        built = mpi_train_job(run, own, job_labels, job_annotations)
    else:
        built = _job(run, kind, job, ns, job_labels, job_annotations, options, replicas, trainer)
    return Resources(
        volumes=tuple(parts.volumes_beside),
        claims=tuple(parts.claims),
        config_maps=(config, *parts.config_maps),
        access=(access,) if access else (),
        job=built,
        runtime=own,
    )


def _job(
    run: Run,
    kind: JobKind,
    job: str,
    ns: str,
    job_labels: dict[str, str],
    job_annotations: dict[str, str],
    options: RenderOptions,
    replicas: tuple[Replica, ...],
    trainer: bool,
) -> Job | TrainJob:
    return (
        train_job(run, job, ns, job_labels, job_annotations, _largest_shm(run, replicas).pod)
        if trainer
        else Job(
            kind,
            job,
            ns,
            job_labels,
            job_annotations,
            _run_policy(run, kind, options),
            replicas,
            **_extra(run, kind, replicas),
        )
    )


def _exec_access(
    run: Run, kind: JobKind, job: str, ns: str, labels: dict[str, str]
) -> Access | None:
    """The Role the kind's exec role needs, bound to the run's ServiceAccount, or to one made
    for the job when the run names none."""
    if kind.exec_role is None:
        return None
    name = f"{job}-{kind.exec_role}"
    account = run.service_account or name
    return Access(
        name=name,
        namespace=ns,
        labels=dict(labels),
        rules=EXEC_RULES,
        service_account=account,
        account_meta=None if run.service_account else Meta(name, ns, dict(labels)),
    )


def _run_policy(run: Run, kind: JobKind, options: RenderOptions) -> RunPolicy:
    ttl = run.keep_seconds
    if ttl is None:
        ttl = options.ttl_seconds_after_finished
    if ttl is None:
        ttl = kind.default_ttl_seconds
    return RunPolicy(
        ttl_seconds_after_finished=ttl,
        active_deadline_seconds=run.timeout_seconds,
        backoff_limit=(
            backoff_limit(ft.max_restarts, unconditional=ft.unconditional)
            if (ft := run.fault_tolerance)
            else None
        ),
        scheduling_policy={"priorityClassName": cls} if (cls := priority_class(run)) else None,
    )


def _extra(run: Run, kind: JobKind, replicas: tuple[Replica, ...]) -> dict[str, Any]:
    if kind.job_type is JobType.MPI:  # MPIJob's own spec fields
        return {"slots_per_worker": mpi_slots_per_worker(run), "main_container": kind.container}
    if kind.run_policy is RunPolicyPlace.JOB_SPEC:
        ft = run.fault_tolerance
        extra: dict[str, Any] = {
            "completions": run.total_replicas,
            "backoff_limit": (
                backoff_limit(ft.max_restarts, unconditional=ft.unconditional) if ft else 0
            ),
        }
        if replicas and replicas[0].restart_policy == "ExitCode":
            # KubeDL's ExitCode policy in plain Kubernetes: any other exit code fails the Job.
            extra["pod_failure_policy"] = {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": kind.container,
                            "operator": "NotIn",
                            "values": list(RETRYABLE_EXIT_CODES),
                        },
                    }
                ]
            }
        return extra
    return {}


def _largest_shm(run: Run, replicas: tuple[Replica, ...]) -> Replica:
    """The replica whose pod a TrainJob's nodes share (one template for every role): the first
    with the largest /dev/shm, which every node then gets."""
    sizes = [run.resources[role].shared_memory for role in run.resources]
    values = [0.0 if size is None else size.value for size in sizes]
    return replicas[values.index(max(values))]
