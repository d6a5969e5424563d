"""What the KubeDL v0.5.0 operator names, labels and mounts on the pods it creates, the same
for every job kind: pod names, labels, retryable exit codes, MPI's ConfigMap and hostfile."""

from __future__ import annotations


def pod_name(job_name: str, role: str, index: int) -> str:
    """The name (and hostname) of a replica's pod, and of its Service where it has one.
    KubeDL v0.5.0 pkg/util (GenGeneralName), pkg/job_controller/service.go (CreateService)"""
    return f"{job_name}-{role}-{index}"


def indexed_job_hostname(job_name: str, index: int) -> str:
    """The hostname of an Indexed Job's pod (a ``custom`` run): ``<job>-<index>``, whatever the
    pod's own (generated) name. Kubernetes, Job "Completion mode: Indexed": "The Pod hostname is
    set to $(job-name)-$(index)" (pkg/controller/job/indexed_job_utils.go)."""
    return f"{job_name}-{index}"


def replica_hostname(custom: bool, job_name: str, role: str, index: int) -> str:
    """A replica's pod hostname, which the container runtime also sets as $HOSTNAME: KubeDL's
    pod name, or an Indexed Job pod's `<job>-<index>` for a custom run."""
    return indexed_job_hostname(job_name, index) if custom else pod_name(job_name, role, index)


# KubeDL's ExitCode restart policy retries these codes (SIGINT, SIGKILL, SIGUSR1 — the user's
# "please retry" — and SIGTERM) and pods failed as OOMKilled/Killed/Evicted/
# UnexpectedAdmissionError; every other non-zero code is permanent.
# KubeDL v0.5.0 pkg/util/train/train_util.go (IsRetryableExitCode, IsRetryablePodFailedReason)
RETRYABLE_EXIT_CODES: tuple[int, ...] = (130, 137, 138, 143)

# The cleanPodPolicy trainstack renders: when the job ends the operator deletes the pods still
# Running (replicas a success rule left behind, PS pods) and keeps the finished ones, whose logs
# users still read. `All` would delete those too.
CLEAN_POD_POLICY = "Running"


def deleted_when_job_ends(clean_pod_policy: str, phase: str) -> bool:
    """Whether a finished job's reconcile deletes a pod in this phase. `Running` spares every
    other phase — a pod still Pending when the job ends (an image pull, the `prepare` init
    container) is left alone, and deleted at a later reconcile once its main container has
    started (a finished job is reconciled again on every pod event, with no early return).
    KubeDL v0.5.0 pkg/job_controller/job.go:46-54 (deletePodsAndServices), job.go:182"""
    if clean_pod_policy == "None":
        return False
    return clean_pod_policy == "All" or phase == "Running"


# Labels the operator puts on every pod (and Service) it creates.
# KubeDL v0.5.0 pkg/job_controller/api/v1/constants.go
REPLICA_TYPE_LABEL = "replica-type"  # the lower-cased replica type
REPLICA_INDEX_LABEL = "replica-index"
# Kubernetes' own: an Indexed Job's pod carries its index here.
# A job annotated so runs its pods on the node's network (KubeDL v0.5.0
# pkg/job_controller/hostnetwork.go:30-31, pkg/job_controller/api/v1/constants.go:34,83).
KUBEDL_NETWORK_MODE_ANNOTATION = "kubedl.io/network-mode"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
# Clones a git repository into the pods of a job annotated so (an init container of KubeDL's).
GIT_SYNC_ANNOTATION = "kubedl.io/git-sync-config"

# MPI (KubeDL v0.5.0 controllers/mpi/mpi_config.go, controllers/mpi/mpijob_controller.go):
MPI_CONFIG_DIR = "/etc/mpi"  # where the operator mounts its ConfigMap (launcher and workers)
MPI_KUBEXEC = "kubexec.sh"
MPI_HOSTFILE = "hostfile"
# The flag --launcher-runs-workloads defaults to true (mpijob_controller.go): the hostfile lists
# the launcher first.
MPI_LAUNCHER_RUNS_WORKLOAD = True
MPI_DEFAULT_SLOTS = 1  # slots per host when spec.slotsPerWorker is unset


def mpi_hostfile(job_name: str, workers: int, slots: int | None) -> str:
    """The hostfile the operator writes into `<job>-config` (Open MPI syntax): the launcher's pod
    first (it runs ranks too), then every worker, each with `slots` slots.
    KubeDL v0.5.0 controllers/mpi/mpi_config.go (newJobConfigMap)"""
    n = MPI_DEFAULT_SLOTS if slots is None else slots
    hosts = [pod_name(job_name, "launcher", 0)] if MPI_LAUNCHER_RUNS_WORKLOAD else []
    hosts += [pod_name(job_name, "worker", i) for i in range(workers)]
    return "".join(f"{h} slots={n}\n" for h in hosts)
