"""An MPI run for an environment whose operator is Kubeflow Trainer → a namespaced
`TrainingRuntime` of its own (templates/trainingruntime.yaml.j2), named after the run's TrainJob,
and the TrainJob that names it (templates/mpitrainjob.yaml.j2).

The runtime's two replicated jobs hold the pod templates trainstack renders for KubeDL's MPIJob,
whole (image, resources, env, the `/ml` tree, bindings, security context, pull secrets, node
selection): the workers' as the `node` job, the launcher's as the `launcher` job. Why a runtime of
the run's own, and the facts about the MPI plugin, are in trainstack.trainer.mpi. What changes from
the KubeDL pods:

- the main container is `node`, the one the plugin mounts the SSH keys (and, on the launcher, the
  hostfile and the OMPI_* variables) into;
- a worker runs an sshd with a config trainstack writes (`node_script`) where on KubeDL it sleeps
  while the launcher execs the ranks into it through kubectl; the launcher's mpirun reaches it
  with the key Trainer mounts (`RSH_AGENT_ENV`);
- the pods run `Never` in Jobs of `backoffLimit: 0` and the JobSet restarts whole, up to the run's
  own faultTolerance.maxRestarts (the runtime is the run's, so the number is carried);
- the replica index is the pod's completion index.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from trainstack.contract.shell import MPI_WORKER_WAIT
from trainstack.contractnames import INDEX_ENV
from trainstack.kubedl import COMPLETION_INDEX_ANNOTATION
from trainstack.render.options import RenderError
from trainstack.render.parts import ML, Container, Env, Pod, Replica
from trainstack.render.pod import kubelet_escape
from trainstack.spec.model import Run
from trainstack.trainer import TRAINJOB_API_VERSION, TRAINJOB_KIND, Runtime
from trainstack.trainer.mpi import (
    MIN_WORKERS,
    OPENMPI,
    RSH_AGENT_ENV,
    SSH_AUTH_MOUNT_PATH,
    SSH_AUTHORIZED_KEYS,
    SSH_PORT,
    SSH_PRIVATE_KEY,
    TRAINING_RUNTIME_KIND,
    set_max_restarts,
)
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY
from trainstack.trainer.runtimes import ANCESTOR_LABEL, ANCESTOR_TRAINER

RUNTIME_TEMPLATE = "trainingruntime.yaml.j2"
TRAINJOB_TEMPLATE = "mpitrainjob.yaml.j2"
# Where a node keeps its sshd's config, host key, pid and the environment its sessions get: the
# pod's own writable home (an emptyDir), never the image's.
SSHD_DIR = f"{ML.home}.trainstack-sshd"
# Where an image keeps sshd (it must be started by its absolute path to re-exec itself).
SSHD_PATHS = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
# What `plan` and `deploy` say about the image (trainstack cannot see inside it).
SSHD_NOTE = (
    "Kubeflow Trainer's MPI launcher starts the ranks on the workers over SSH: the image must "
    "contain OpenSSH (sshd, ssh and ssh-keygen) and know the run's user (runAsUser) by name "
    "(docs/trainer.md)"
)


@dataclass(frozen=True)
class RuntimeJob:
    """One replicated job of the runtime's JobSet: a pod template and what the JobSet says of
    it."""

    name: str
    trainer_ancestor: bool
    depends_on: tuple[dict[str, str], ...]
    pod: Pod

    @property
    def job_labels(self) -> dict[str, str] | None:
        return {ANCESTOR_LABEL: ANCESTOR_TRAINER} if self.trainer_ancestor else None


@dataclass(frozen=True)
class TrainingRuntime:
    name: str
    namespace: str
    labels: dict[str, str]
    num_nodes: int
    num_proc_per_node: int
    max_restarts: int
    backoff_limit: int
    success_operator: str
    success_targets: tuple[str, ...]
    jobs: tuple[RuntimeJob, ...]
    mpi_implementation: str = OPENMPI
    ssh_auth_mount_path: str = SSH_AUTH_MOUNT_PATH
    run_launcher_as_node: bool = True
    api_version: str = TRAINJOB_API_VERSION
    kind: str = TRAINING_RUNTIME_KIND
    template: str = RUNTIME_TEMPLATE


@dataclass(frozen=True)
class MPITrainJob:
    """A TrainJob on the run's own TrainingRuntime: everything about its pods is the runtime's."""

    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    runtime_name: str
    num_nodes: int
    active_deadline_seconds: int | None = None
    api_version: str = TRAINJOB_API_VERSION
    kind: str = TRAINJOB_KIND
    runtime_kind: str = TRAINING_RUNTIME_KIND
    template: str = TRAINJOB_TEMPLATE


def _refuse(run: Run, what: str, hint: str) -> RenderError:
    return RenderError(f"{run.source or run.name}: {what}", hint=hint)


def rsh_agent() -> str:
    """The launcher's remote-start agent: ssh to the nodes' port with the key Trainer mounts.
    Host keys are made afresh in every pod, so none is known or checked."""
    options = ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "LogLevel=ERROR")
    key = f"{SSH_AUTH_MOUNT_PATH}/{SSH_PRIVATE_KEY}"
    return " ".join(("ssh", "-p", str(SSH_PORT), "-i", key, *(f"-o {o}" for o in options)))


def sshd_config() -> tuple[str, ...]:
    """The nodes' sshd_config, a line each. Only the key Trainer mounts logs in (StrictModes
    off: the Secret's files are root's, mode 0644). A session runs with the container's
    environment (written at start), as a rank kubectl execs on KubeDL does."""
    return (
        f"Port {SSH_PORT}",
        f"HostKey {SSHD_DIR}/host_key",
        f"PidFile {SSHD_DIR}/sshd.pid",
        f"AuthorizedKeysFile {SSH_AUTH_MOUNT_PATH}/{SSH_AUTHORIZED_KEYS}",
        "StrictModes no",
        "PasswordAuthentication no",
        "PermitUserEnvironment no",
        f'ForceCommand . {SSHD_DIR}/environment; eval "$SSH_ORIGINAL_COMMAND"',
    )


def node_script() -> str:
    """What a worker's node runs after trainstack's prelude (instead of KubeDL's wait): its
    environment saved for the sessions, a host key, the config, then sshd in the foreground
    as the container's first process. An image without sshd fails at once, saying so."""
    missing = (
        "trainstack: an MPI run on Kubeflow Trainer needs OpenSSH's sshd in its image (the "
        "launcher's mpirun starts the ranks over SSH)"
    )
    config = " ".join(shlex.quote(line) for line in sshd_config())
    paths = " ".join(SSHD_PATHS)
    return "\n".join(
        (
            f"mkdir -p {SSHD_DIR} && export -p > {SSHD_DIR}/environment || exit 1",
            f"[ -f {SSHD_DIR}/host_key ] || ssh-keygen -q -t ed25519 -N '' "
            f"-f {SSHD_DIR}/host_key || exit 1",
            f"printf '%s\\n' {config} > {SSHD_DIR}/sshd_config || exit 1",
            f'for s in {paths} "$(command -v sshd)"; do',
            f'  [ -x "$s" ] && exec "$s" -D -e -f {SSHD_DIR}/sshd_config',
            "done",
            f"echo {shlex.quote(missing)} >&2",
            "exit 127",
        )
    )


def _index(env: tuple[Env, ...]) -> tuple[Env, ...]:
    """The replica index a pod reads: its completion index (JobSet's Jobs are Indexed)."""
    path = f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
    index = Env(INDEX_ENV, value_from={"fieldRef": {"fieldPath": path}})
    return tuple(index if e.name == INDEX_ENV else e for e in env)


def _node_container(run: Run, rt: Runtime, main: Container, *, launcher: bool) -> Container:
    env = _index(main.env)
    taken = sorted({e.name for e in env} & (rt.reserved | {RSH_AGENT_ENV}))
    if taken:
        raise _refuse(
            run,
            f"spec.env: {', '.join(taken)} is set by Kubeflow Trainer's MPI plugin or by "
            "trainstack for it",
            hint="rename the variable",
        )
    if launcher:
        return replace(main, name=rt.container, env=(*env, Env(RSH_AGENT_ENV, value=rsh_agent())))
    script = (main.command or ("",))[-1]
    wait = kubelet_escape(MPI_WORKER_WAIT)
    if not script.endswith(wait):  # trainstack.contract.shell: a worker only waits
        raise ValueError("an MPI worker's KubeDL command ends in its wait")
    command = (*(main.command or ())[:-1], script[: -len(wait)] + kubelet_escape(node_script()))
    return replace(
        main,
        name=rt.container,
        command=command,
        env=env,
        readiness_probe={"tcpSocket": {"port": SSH_PORT}},
    )


def _pod(run: Run, rt: Runtime, pod: Pod, *, launcher: bool) -> Pod:
    main, *sidecars = pod.containers
    return replace(
        pod,
        restart_policy=RUNTIME_FAILURE_POLICY.pod_restart_policy,
        # The key is the Secret's, owner root and mode 0640 (trainstack.trainer.mpi): the
        # run's user reads it through the pod's group.
        security_context={**pod.security_context, "fsGroup": run.run_as_user},
        containers=(_node_container(run, rt, main, launcher=launcher), *sidecars),
        annotations=None,
    )


def check_mpi(run: Run) -> None:
    """What an MPI run on Trainer cannot be, one RenderError each."""
    if run.run_as_user == 0:
        # OpenSSH's client refuses a private key others may read when it owns the file, and root
        # owns the Secret's files; the plugin mounts the key 0640 (trainstack.trainer.mpi).
        raise _refuse(
            run,
            "spec.runAsUser: an MPI run on Kubeflow Trainer cannot run as root: ssh refuses the "
            "key Trainer mounts (mode 0640) to the user that owns it",
            hint="run as the image's non-root user (its uid as spec.runAsUser)",
        )
    workers = run.resources["worker"].replicas if "worker" in run.resources else 0
    if workers < MIN_WORKERS:
        raise _refuse(
            run,
            "spec.resources.worker: an MPI run on Kubeflow Trainer needs a worker: the runtime "
            "starts at least one node beside the launcher",
            hint="give it a worker, or run it on an environment whose operator is kubedl",
        )


def training_runtime(
    run: Run,
    rt: Runtime,
    name: str,
    namespace: str,
    labels: dict[str, str],
    replicas: tuple[Replica, ...],
    slots: int,
) -> TrainingRuntime:
    """The run's own runtime from its KubeDL MPIJob replicas (`replicas`, in role order)."""
    check_mpi(run)
    by_role = dict(zip(run.resources, replicas, strict=True))
    policy = RUNTIME_FAILURE_POLICY
    jobs = []
    for job in rt.replicated_jobs:
        (role,) = job.roles
        launcher = job.trainer_ancestor
        jobs.append(
            RuntimeJob(
                name=job.name,
                trainer_ancestor=launcher,
                depends_on=tuple({"name": n, "status": str(s)} for n, s in job.depends_on),
                pod=_pod(run, rt, by_role[role].pod, launcher=launcher),
            )
        )
    return TrainingRuntime(
        name=name,
        namespace=namespace,
        labels=labels,
        num_nodes=run.total_replicas,
        num_proc_per_node=slots,
        max_restarts=set_max_restarts(ft.max_restarts if (ft := run.fault_tolerance) else None),
        backoff_limit=policy.backoff_limit,
        success_operator=str(rt.success_operator),
        success_targets=rt.success_targets,
        jobs=tuple(jobs),
    )


def mpi_train_job(
    run: Run, runtime: TrainingRuntime, labels: dict[str, str], annotations: dict[str, str]
) -> MPITrainJob:
    return MPITrainJob(
        name=runtime.name,
        namespace=runtime.namespace,
        labels=labels,
        annotations=annotations,
        runtime_name=runtime.name,
        num_nodes=runtime.num_nodes,
        active_deadline_seconds=run.timeout_seconds,
    )
