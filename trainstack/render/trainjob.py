"""A PyTorch or XGBoost run for an environment whose operator is Kubeflow Trainer → the typed
context of a `TrainJob` (templates/trainjob.yaml.j2) on the job type's ClusterTrainingRuntime
(an MPI run's TrainJob names a runtime of its own: trainstack.render.mpiruntime).

Built from the pod trainstack renders for KubeDL, so both backends get the same command, env,
`/ml` tree, code and bindings. A TrainJob says less than a KubeDL job (trainstack.trainer.trainjob):
its nodes share one pod template, and what the runtime does not take from `spec.trainer` comes
through one runtime patch. What cannot be said that way is refused here, one RenderError each,
rather than rendered into a job that runs otherwise than the run asks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from trainstack.contract import Topology
from trainstack.contractnames import INDEX_ENV, ROLE_ENV
from trainstack.kubedl import COMPLETION_INDEX_ANNOTATION
from trainstack.kubedl.jobtype import JobType
from trainstack.platformnames import ROLE_LABEL
from trainstack.render.mpiruntime import SSHD_NOTE
from trainstack.render.options import RenderError
from trainstack.render.parts import Container, Env, Pod
from trainstack.render.pod import PREPARE_CONTAINER, kubelet_escape
from trainstack.spec.model import FrozenMap, Run
from trainstack.trainer import (
    RUNTIME_KIND,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
    Runtime,
    pod_address,
    runtime,
)
from trainstack.trainer.backend import Operator
from trainstack.trainer.plugin import node_ranks
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY
from trainstack.trainer.runtimes import RUNTIMES
from trainstack.trainer.trainjob import MAX_TRAINER_ARGV, MAX_TRAINER_ENV, PATCH_MANAGER

TEMPLATE = "trainjob.yaml.j2"


@dataclass(frozen=True)
class Trainer:
    """spec.trainer: what lands on the trainer job's `node` container, and how many nodes."""

    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[Env, ...]
    num_nodes: int
    resources_per_node: dict[str, Any] | None


@dataclass(frozen=True)
class PodPatch:
    """One replicated job's pod template patch (PodTemplatePatch): its labels and the pod spec
    fields a patch may set; `containers` are container patches (name, volumeMounts)."""

    job: str
    labels: dict[str, str]
    service_account: str | None
    security_context: dict[str, Any]
    pull_secrets: list[dict[str, str]] | None
    node_selector: dict[str, str] | None
    tolerations: list[dict[str, Any]] | None
    affinity: dict[str, Any] | None
    containers: tuple[dict[str, Any], ...]
    volumes: list[dict[str, Any]]


@dataclass(frozen=True)
class TrainJob:
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    runtime_name: str
    trainer: Trainer
    manager: str
    patches: tuple[PodPatch, ...]
    active_deadline_seconds: int | None = None
    api_version: str = TRAINJOB_API_VERSION
    kind: str = TRAINJOB_KIND
    runtime_kind: str = RUNTIME_KIND
    template: str = TEMPLATE


def trainer_topology(run: Run, namespace: str, job: str) -> Topology:
    """Where each replica is reached (training_job.json's `cluster`): the trainer job's nodes in
    role order, the master node 0, at the port the plugin adds (trainstack.trainer.jobset)."""
    rt = check_renders(run)
    addresses: dict[str, tuple[str, ...]] = {}
    if rt.per_run:  # each role its own replicated job, its replicas that job's pods in order
        for role, each in run.resources.items():
            name = rt.job_of(role).name
            addresses[role] = tuple(pod_address(job, name, i) for i in range(each.replicas))
        return Topology(job_name=job, addresses=FrozenMap(addresses), namespace=namespace)
    ranks = node_ranks(rt, {role: res.replicas for role, res in run.resources.items()})
    for role in rt.trainer_job.roles:
        res = run.resources.get(role)
        count = res.replicas if res is not None else 0
        hosts = [pod_address(job, rt.trainer_job.name, ranks[(role, i)]) for i in range(count)]
        addresses[role] = tuple(h if rt.port is None else f"{h}:{rt.port}" for h in hosts)
    return Topology(job_name=job, addresses=FrozenMap(addresses), namespace=namespace)


def _refuse(run: Run, what: str, hint: str) -> RenderError:
    where = str(run.source) if run.source else run.name
    return RenderError(f"{where}: {what}", hint=hint)


def check_renders(run: Run) -> Runtime:
    """The runtime a run's TrainJob names, or one RenderError for what a TrainJob cannot say."""
    kind = JobType(run.job_type)
    rt = runtime(kind)
    if rt.per_run:  # its jobs' pods are the run's own, each role's (render.mpiruntime)
        return rt
    sizes = {(r.cpu, r.memory, r.gpu) for r in run.resources.values()}
    if len(sizes) > 1:
        # Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:280-282: one
        # resourcesPerNode for every node of the trainer job. (sharedMemory may differ: it is a
        # ceiling on /dev/shm, not a request, and every node gets the largest.)
        raise _refuse(
            run,
            f"spec.resources: a TrainJob's nodes are alike, but the roles ask for different "
            f"resources ({', '.join(sorted(run.resources))})",
            hint="give every role the same cpu, memory and gpu",
        )
    return rt


def train_job(
    run: Run,
    name: str,
    namespace: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    pod: Pod,
) -> TrainJob:
    """The TrainJob of a run whose KubeDL pod template (any role's: they differ only in the
    role, which on Trainer is the node's) is `pod`."""
    rt = check_renders(run)
    main = pod.containers[0]
    others = [c.name for c in pod.init_containers if c.name != PREPARE_CONTAINER]
    if others:
        # A patch may only name init containers the runtime has (Trainer v2.3.0
        # pkg/runtime/framework/plugins/jobset/jobset.go:193-198), and sets no image or command.
        raise _refuse(
            run,
            f"its pods need the init container(s) {', '.join(others)} (code from git), which a "
            "TrainJob cannot add",
            hint="ship the code as a local directory or an oss:// prefix",
        )
    prepare = next((c for c in pod.init_containers if c.name == PREPARE_CONTAINER), None)
    command, mounts = _command(run, rt, main, prepare)
    env = _env(run, rt, main.env)
    job = rt.trainer_job.name
    patch = PodPatch(
        job=job,
        labels={**pod.labels, ROLE_LABEL: job},
        service_account=pod.service_account,
        security_context=pod.security_context,
        pull_secrets=pod.pull_secrets,
        node_selector=pod.node_selector,
        tolerations=pod.tolerations,
        # The spread constraint is only a preference (ScheduleAnyway) and a patch cannot set
        # one; the affinity keeps the preference to spread or pack.
        affinity=pod.affinity,
        containers=({"name": rt.container, "volumeMounts": list(mounts)},),
        volumes=pod.volumes,
    )
    return TrainJob(
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        runtime_name=rt.name_at(run.priority),
        trainer=Trainer(
            image=main.image,
            command=command,
            args=main.args or (),
            env=env,
            num_nodes=run.total_replicas,
            resources_per_node=main.resources,
        ),
        manager=PATCH_MANAGER,
        patches=(patch,),
        active_deadline_seconds=run.timeout_seconds,
    )


def _command(
    run: Run, rt: Runtime, main: Container, prepare: Container | None
) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """The node container's command and mounts. The prepare steps and the KubeDL names run in a
    shell before the launcher, which `exec` makes the container's first process as on KubeDL;
    the prepare container's mounts join the node's (a patch mounts each volume once)."""
    lines: list[str] = []  # escaped for the kubelet, as every command word is
    mounts = list(main.mounts)
    if prepare is not None and prepare.command is not None:
        lines.append(prepare.command[-1].rstrip("\n"))  # `set -e` and the steps, escaped
        by_name = {m["name"]: m for m in mounts}
        for m in prepare.mounts:
            have = by_name.setdefault(m["name"], m)
            if have is m:
                mounts.append(m)
            elif have["mountPath"] != m["mountPath"]:
                raise _refuse(
                    run,
                    f"volume {m['name']} is mounted at {have['mountPath']} and "
                    f"{m['mountPath']}, and a TrainJob mounts a volume once",
                    hint="bind it once",
                )
    lines += [kubelet_escape(f'export {ours}="${{{theirs}}}"') for ours, theirs in rt.kubedl_env]
    argv = tuple(main.command or ())
    if lines:
        lines.append(kubelet_escape('exec "$@"'))
        argv = ("sh", "-c", "\n".join(lines) + "\n", "sh", *argv)
    if len(argv) > MAX_TRAINER_ARGV or len(main.args or ()) > MAX_TRAINER_ARGV:
        raise _refuse(
            run,
            f"a TrainJob's command and args hold at most {MAX_TRAINER_ARGV} words each",
            hint="pass fewer hyperparameters as arguments",
        )
    return argv, tuple(mounts)


def _env(run: Run, rt: Runtime, env: tuple[Env, ...]) -> tuple[Env, ...]:
    """The node's env: trainstack's, the role and index those of the node (its completion
    index, the node rank: the master is node 0)."""
    index = Env(
        INDEX_ENV,
        value_from={
            "fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"}
        },
    )
    out = tuple(
        index
        if e.name == INDEX_ENV
        else replace(e, value=rt.trainer_job.name)
        if e.name == ROLE_ENV
        else e
        for e in env
    )
    taken = sorted({e.name for e in out} & rt.reserved)
    if taken:
        raise _refuse(
            run,
            f"spec.env: {', '.join(taken)} is set by Kubeflow Trainer's {rt.runtime_name} "
            "runtime, which refuses a TrainJob that sets it",
            hint="rename the variable",
        )
    if len(out) > MAX_TRAINER_ENV:
        raise _refuse(
            run,
            f"a TrainJob's node takes at most {MAX_TRAINER_ENV} variables; this run has {len(out)}",
            hint="pass fewer parameters, inputs or spec.env variables",
        )
    return out


def not_carried(operator: Operator, run: Run) -> list[str]:
    """What a run asks for that its environment's operator does not do as asked, one sentence
    each, for `plan` and `deploy` to say: nothing on KubeDL. On Trainer the runtime's JobSet
    decides restarts (trainstack.trainer.restart), whatever the run's faultTolerance says; an
    MPI run's own runtime carries its maxRestarts, but needs sshd in the image."""
    if operator is not Operator.TRAINER or JobType(run.component.job_type) not in RUNTIMES:
        return []
    if RUNTIMES[JobType(run.component.job_type)].per_run:
        notes = [SSHD_NOTE]
        ft = run.fault_tolerance
        if ft is not None and not ft.unconditional:
            notes.append(
                f"faultTolerance.maxRestarts {ft.max_restarts} restarts the whole set on any "
                "failure on Kubeflow Trainer (JobSet's failurePolicy tells no exit codes apart), "
                "where KubeDL restarts only on a retryable exit code (docs/trainer.md)"
            )
        return notes
    policy = RUNTIME_FAILURE_POLICY
    ft = run.fault_tolerance
    notes = []
    if ft is None:
        notes.append(
            f"without faultTolerance a KubeDL job fails at its first failure, but on Kubeflow "
            f"Trainer the runtime restarts the whole set up to {policy.max_restarts} times "
            "(failurePolicy.maxRestarts; docs/trainer.md)"
        )
    elif ft.max_restarts != policy.max_restarts or ft.unconditional:
        what = f"faultTolerance.maxRestarts {ft.max_restarts}" + (
            " and unconditional" if ft.unconditional else ""
        )
        notes.append(
            f"{what} is not carried: a TrainJob has no field for it, and the runtime restarts the "
            f"whole set on any failure up to {policy.max_restarts} times "
            "(failurePolicy.maxRestarts; docs/trainer.md)"
        )
    return notes
