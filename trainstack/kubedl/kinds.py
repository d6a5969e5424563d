"""One record per job type: every fact trainstack relies on about how KubeDL v0.5.0 (or, for
`custom`, Kubernetes' Indexed Job) runs it.

Validation, the contract, the renderer, the local runner, `trainstack env` and `trainstack init`
all read these records; nothing else in trainstack keeps a per-kind table. Each operator fact
names the KubeDL v0.5.0 file it comes from (paths in github.com/kubedl-io/kubedl at v0.5.0).
Adding a job kind means adding one `JobKind` here (and a template only when its shape is new).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from trainstack.kubedl.jobtype import JobType


class SuccessRule(enum.Enum):
    """When the operator marks a job Succeeded (and stops the pods still running)."""

    # The chief or master exits 0; without one, worker 0 does.
    # KubeDL v0.5.0 controllers/tensorflow/status.go
    CHIEF_ELSE_WORKER0 = "chief-or-master-else-worker-0"
    # The master and every worker exit 0.  KubeDL v0.5.0 controllers/pytorch/status.go
    MASTER_AND_ALL_WORKERS = "master-and-all-workers"
    # The master exits 0, whatever the workers do.  KubeDL v0.5.0 controllers/xgboost/job.go
    MASTER_ALONE = "master-alone"
    # The AIMaster exits 0, or every worker does (SuccessPolicy AllWorkers is the default).
    # KubeDL v0.5.0 controllers/elasticbatch/status.go, apis/inference/v1alpha1/defaults.go
    AIMASTER_OR_ALL_WORKERS = "aimaster-or-all-workers"
    # The launcher exits 0.  KubeDL v0.5.0 controllers/mpi/job.go
    LAUNCHER = "launcher"
    # Every completion index exits 0 (Kubernetes Indexed Job).
    ALL_COMPLETIONS = "all-completions"


class RunPolicyPlace(enum.Enum):
    """Where the run policy (cleanPodPolicy, TTL, deadline, backoff, scheduling) goes."""

    INLINE = "inline"  # embedded in spec (`json:",inline"`)
    NESTED = "spec.runPolicy"  # MPIJob: apis/training/v1alpha1/mpijob_types.go
    JOB_SPEC = "batch/v1"  # a Kubernetes Job: its own spec fields


class EnvScheme(enum.Enum):
    """How the framework variables' values are computed (trainstack.contract.framework)."""

    TF_CONFIG = "tf-config"
    TORCH = "torch"  # RANK 0 for the master, index + 1 for workers
    XGBOOST = "xgboost"  # RANK = index within each role
    ELASTICBATCH = "elasticbatch"
    MPI = "mpi"
    INDEXED_JOB = "indexed-job"


@dataclass(frozen=True)
class Injected:
    """A variable the operator (or Kubernetes) appends to a container's env. It is appended after
    the template's env, so its value wins over anything trainstack or the user put there."""

    name: str
    roles: tuple[str, ...]  # the roles whose pods get it
    how: str  # how the value is computed, for docs and `trainstack env`
    # Only the kind's default container gets it (False: every container of the pod).
    default_container_only: bool = True
    # Only when the job has more than one replica in total (TF_CONFIG).
    distributed_only: bool = False


@dataclass(frozen=True)
class Role:
    """One replica role. `name` is trainstack's (and KubeDL's lower-cased) role name."""

    name: str
    replica_type: str  # the key in the replica map (KubeDL's ReplicaType)
    required: bool = False  # a run must size it
    singleton: bool = False  # exactly one replica
    gets_pod: bool = True  # the operator creates its pods
    # The operator creates a headless Service `<job>-<role>-<i>` per replica, so the replica
    # has a cluster address (TF_CONFIG, training_job.json's `cluster`).
    gets_service: bool = False
    # The role whose pods must be Running before this role's pods are created (DAG scheduling,
    # feature gate DAGScheduling, on by default: KubeDL v0.5.0 pkg/features/features.go).
    starts_after: str | None = None
    # Replicas a run gets when it gives no resources at all (0: the role is left out).
    default_replicas: int = 0
    scaffold_replicas: int = 0  # what `trainstack init` writes in the example run
    # Why validation refuses the role, when it does (a role KubeDL accepts but never runs).
    refused: str | None = None
    required_reason: str = ""  # why a required role is required, for the validation error
    # False: the role's pods only host processes another role starts in them (MPI workers run
    # the ranks the launcher execs), so they wait instead of running the component's command.
    runs_command: bool = True

    @property
    def addressable(self) -> bool:
        """Listed in TF_CONFIG and training_job.json's `cluster`: only replicas with a Service
        can be reached by name."""
        return self.gets_service


@dataclass(frozen=True)
class JobKind:
    job_type: JobType
    api_version: str
    kind: str
    template: str  # templates/<name>
    replicas_key: str | None  # the replica map in spec; None for the batch/v1 Job
    container: str  # the default container name the operator looks for
    port_name: str | None  # the default container port name (Services and MASTER_PORT read it)
    port: int | None  # the default port trainstack gives the container
    roles: tuple[Role, ...]  # trainstack's order (the order of `spec.resources`)
    primary_role: str  # `trainstack env`'s default role
    env_scheme: EnvScheme
    injected: tuple[Injected, ...]
    success: SuccessRule
    run_policy: RunPolicyPlace
    # KubeDL replaces a pod template's restartPolicy (Never for ExitCode, else the replica's) and
    # records a Warning event per pod when the template set one.
    # KubeDL v0.5.0 pkg/job_controller/pod.go (createNewPod, setRestartPolicy)
    overwrites_template_restart_policy: bool
    # ExitCode: only the failed pod is deleted and recreated; its peers keep running.
    # KubeDL v0.5.0 pkg/job_controller/failover.go, pkg/job_controller/pod.go
    recreates_only_failed_pod: bool
    operator_ttl_seconds: int | None  # the operator's default ttlSecondsAfterFinished
    default_ttl_seconds: int | None  # what trainstack renders when the run gives none
    scaffold_image: str
    scaffold_launch: str = "python main.py"
    # ConfigMap the operator owns, `<job><suffix>`, and the keys it holds.
    operator_config_map_suffix: str | None = None
    operator_config_map_keys: tuple[str, ...] = ()
    # Job annotation without which the operator creates no pod but the AIMaster's.
    readiness_annotation: tuple[str, str] | None = None
    # The role that runs `kubectl exec` into the others (needs pods get/list/watch, pods/exec).
    exec_role: str | None = None
    # `spec.advanced` ports (customPortList/customPortNumPerWorker in Alibaba PAI DLC: create a
    # training job, its advanced parameters) apply.
    custom_ports: bool = False

    # --- lookups ---------------------------------------------------------------------------

    @property
    def by_kubedl(self) -> bool:
        """Run by KubeDL (so its features apply: git-sync annotation, Services, failover), not by
        Kubernetes' Job controller."""
        return self.replicas_key is not None

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles)

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(f"a {self.job_type} job has no role {name!r}")

    def has_role(self, name: str) -> bool:
        return any(r.name == name for r in self.roles)

    @property
    def required_roles(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles if r.required)

    @property
    def singleton_roles(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles if r.singleton)

    @property
    def default_resources(self) -> tuple[tuple[str, int], ...]:
        return tuple((r.name, r.default_replicas) for r in self.roles if r.default_replicas)

    @property
    def scaffold_roles(self) -> tuple[tuple[str, int], ...]:
        return tuple((r.name, r.scaffold_replicas) for r in self.roles if r.scaffold_replicas)

    def injected_names(self, role: str | None = None) -> tuple[str, ...]:
        """Names the operator adds (to `role`'s pods, or to any role's when None)."""
        return tuple(
            dict.fromkeys(i.name for i in self.injected if role is None or role in i.roles)
        )

    def injected_for(self, role: str) -> tuple[Injected, ...]:
        return tuple(i for i in self.injected if role in i.roles)

    def operator_config_map(self, job_name: str) -> str | None:
        suffix = self.operator_config_map_suffix
        return None if suffix is None else job_name + suffix


def pod_name(job_name: str, role: str, index: int) -> str:
    """The name (and hostname) of a replica's pod, and of its Service where it has one.
    KubeDL v0.5.0 pkg/util (GenGeneralName), pkg/job_controller/service.go (CreateService)"""
    return f"{job_name}-{role}-{index}"


# KubeDL's ExitCode restart policy retries these codes (SIGINT, SIGKILL, SIGUSR1 — the user's
# "please retry" — and SIGTERM) and pods failed as OOMKilled/Killed/Evicted/
# UnexpectedAdmissionError; every other non-zero code is permanent.
# KubeDL v0.5.0 pkg/util/train/train_util.go (IsRetryableExitCode, IsRetryablePodFailedReason)
RETRYABLE_EXIT_CODES: tuple[int, ...] = (130, 137, 138, 143)

# Labels the operator puts on every pod (and Service) it creates.
# KubeDL v0.5.0 pkg/job_controller/api/v1/constants.go
REPLICA_TYPE_LABEL = "replica-type"  # the lower-cased replica type
REPLICA_INDEX_LABEL = "replica-index"
# Kubernetes' own: an Indexed Job's pod carries its index here.
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"

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


KINDS: Mapping[JobType, JobKind] = {
    JobType.TENSORFLOW: JobKind(
        job_type=JobType.TENSORFLOW,
        api_version="training.kubedl.io/v1alpha1",
        kind="TFJob",
        template="kubedljob.yaml.j2",
        replicas_key="tfReplicaSpecs",
        # KubeDL v0.5.0 apis/training/v1alpha1/tfjob_constants.go
        container="tensorflow",
        port_name="tfjob-port",
        port=2222,
        roles=(
            # Services for every replica type it creates (shouldCreateService is false only for
            # PyTorch workers, MPI, ElasticDL and ElasticBatch).
            # KubeDL v0.5.0 pkg/job_controller/job.go (shouldCreateService)
            # Chief, master and workers wait for the parameter servers to be Running.
            # KubeDL v0.5.0 apis/training/v1alpha1/tfjob_defaults.go (setDefaultTFDAGCondition)
            Role(
                "chief",
                "Chief",
                singleton=True,
                gets_service=True,
                scaffold_replicas=1,
                starts_after="ps",
            ),
            Role("master", "Master", singleton=True, gets_service=True, starts_after="ps"),
            Role("ps", "PS", gets_service=True),
            Role(
                "worker",
                "Worker",
                gets_service=True,
                default_replicas=1,
                scaffold_replicas=2,
                starts_after="ps",
            ),
            # Not in GetReconcileOrders (PS, Master, Chief, Worker): no pod is ever created, and
            # genClusterSpec skips it. KubeDL v0.5.0 controllers/tensorflow/tfjob_controller.go,
            # controllers/tensorflow/tensorflow.go
            Role(
                "evaluator",
                "Evaluator",
                gets_pod=False,
                refused="KubeDL v0.5.0 never creates an Evaluator pod (the TFJob controller "
                "reconciles only PS, Master, Chief and Worker), so it would never run; run the "
                "evaluation as its own job or inside the chief",
            ),
        ),
        primary_role="worker",
        env_scheme=EnvScheme.TF_CONFIG,
        injected=(
            # Only on the `tensorflow` container, only when the job has more than one replica.
            # KubeDL v0.5.0 controllers/tensorflow/tfjob_controller.go (SetClusterSpec,
            # isDistributed), controllers/tensorflow/tensorflow.go (genTFConfigJSONStr)
            Injected(
                "TF_CONFIG",
                ("chief", "master", "ps", "worker"),
                '{"cluster": {role: ["<job>-<role>-<i>.<ns>.svc:2222", ...]} for every '
                'role but evaluator, "task": {"type": role, "index": i}, '
                '"environment": "cloud"} (Go compact JSON, roles sorted)',
                distributed_only=True,
            ),
        ),
        success=SuccessRule.CHIEF_ELSE_WORKER0,
        run_policy=RunPolicyPlace.INLINE,  # apis/training/v1alpha1/tfjob_types.go
        overwrites_template_restart_policy=True,
        recreates_only_failed_pod=True,
        operator_ttl_seconds=None,
        default_ttl_seconds=None,
        scaffold_image="tensorflow/tensorflow:2.15.0",
    ),
    JobType.PYTORCH: JobKind(
        job_type=JobType.PYTORCH,
        api_version="training.kubedl.io/v1alpha1",
        kind="PyTorchJob",
        template="kubedljob.yaml.j2",
        replicas_key="pytorchReplicaSpecs",
        # KubeDL v0.5.0 apis/training/v1alpha1/pytorchjob_constants.go
        container="pytorch",
        port_name="pytorchjob-port",
        port=23456,
        roles=(
            # Only the master gets a Service. KubeDL v0.5.0 pkg/job_controller/job.go
            Role(
                "master",
                "Master",
                required=True,
                singleton=True,
                gets_service=True,
                default_replicas=1,
                scaffold_replicas=1,
            ),
            # Workers wait for the master to be Running (DependOn).
            # KubeDL v0.5.0 apis/training/v1alpha1/pytorchjob_defaults.go
            Role("worker", "Worker", starts_after="master", scaffold_replicas=1),
        ),
        primary_role="master",
        env_scheme=EnvScheme.TORCH,
        # On every container of every pod. KubeDL v0.5.0 controllers/pytorch/
        # pytorchjob_controller.go (SetClusterSpec)
        injected=(
            Injected(
                "MASTER_PORT",
                ("master", "worker"),
                "the master's pytorchjob-port",
                default_container_only=False,
            ),
            Injected(
                "MASTER_ADDR",
                ("master", "worker"),
                "`localhost` on the master (feature gate PyTorchLocalMasterAddr), else the "
                "master's Service name <job>-master-0",
                default_container_only=False,
            ),
            Injected(
                "RANK",
                ("master", "worker"),
                "0 on the master, index + 1 on worker i",
                default_container_only=False,
            ),
            Injected("PYTHONUNBUFFERED", ("master", "worker"), "0", default_container_only=False),
            Injected(
                "WORLD_SIZE",
                ("master", "worker"),
                "the number of replicas (pods)",
                default_container_only=False,
            ),
        ),
        success=SuccessRule.MASTER_AND_ALL_WORKERS,
        run_policy=RunPolicyPlace.INLINE,  # apis/training/v1alpha1/pytorchjob_types.go
        overwrites_template_restart_policy=True,
        recreates_only_failed_pod=True,
        operator_ttl_seconds=None,
        default_ttl_seconds=None,
        scaffold_image="pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime",
        custom_ports=True,
    ),
    JobType.XGBOOST: JobKind(
        job_type=JobType.XGBOOST,
        api_version="training.kubedl.io/v1alpha1",
        kind="XGBoostJob",
        template="kubedljob.yaml.j2",
        replicas_key="xgbReplicaSpecs",
        # KubeDL v0.5.0 apis/training/v1alpha1/xgboostjob_constants.go
        container="xgboostjob",
        port_name="xgboostjob-port",
        port=9999,
        roles=(
            # Both roles get Services; no start order (GetReconcileOrders: Master, Worker).
            # KubeDL v0.5.0 pkg/job_controller/job.go (shouldCreateService),
            # controllers/xgboost/xgboostjob_controller.go
            Role(
                "master",
                "Master",
                required=True,
                singleton=True,
                gets_service=True,
                default_replicas=1,
                scaffold_replicas=1,
            ),
            # Workers wait for the master to be Running. KubeDL v0.5.0
            # apis/training/v1alpha1/xgboostjob_defaults.go (setDefaultXGBoostDAGConditions)
            Role("worker", "Worker", gets_service=True, scaffold_replicas=1, starts_after="master"),
        ),
        primary_role="master",
        env_scheme=EnvScheme.XGBOOST,
        # On every container. KubeDL v0.5.0 controllers/xgboost/pod.go (SetPodEnv)
        injected=(
            Injected(
                "MASTER_PORT",
                ("master", "worker"),
                "the master's xgboostjob-port",
                default_container_only=False,
            ),
            Injected(
                "MASTER_ADDR",
                ("master", "worker"),
                "the master's Service name <job>-master-0 (on the master too)",
                default_container_only=False,
            ),
            Injected(
                "WORLD_SIZE",
                ("master", "worker"),
                "the number of replicas (pods)",
                default_container_only=False,
            ),
            Injected(
                "RANK",
                ("master", "worker"),
                "the index within the role: master-0 and worker-0 are both 0",
                default_container_only=False,
            ),
            Injected("PYTHONUNBUFFERED", ("master", "worker"), "0", default_container_only=False),
        ),
        success=SuccessRule.MASTER_ALONE,
        run_policy=RunPolicyPlace.INLINE,  # apis/training/v1alpha1/xgboostjob_types.go
        overwrites_template_restart_policy=True,
        recreates_only_failed_pod=True,
        # The operator deletes the job, its pods and their logs 100 s after it finishes.
        # KubeDL v0.5.0 apis/training/v1alpha1/xgboostjob_defaults.go, xgboostjob_constants.go
        operator_ttl_seconds=100,
        default_ttl_seconds=86400,  # a day to read status and logs
        scaffold_image="python:3.11-slim",
    ),
    JobType.ELASTICBATCH: JobKind(
        job_type=JobType.ELASTICBATCH,
        api_version="inference.kubedl.io/v1alpha1",
        kind="ElasticBatchJob",
        template="kubedljob.yaml.j2",
        replicas_key="elasticBatchReplicaSpecs",
        # KubeDL v0.5.0 apis/inference/v1alpha1/elasticbatchjob_constants.go
        container="elasticbatch",
        port_name="elstcbatch-port",
        port=23456,
        roles=(
            # No Services at all. KubeDL v0.5.0 pkg/job_controller/job.go (shouldCreateService)
            # Workers wait for the AIMaster to be Running.
            # KubeDL v0.5.0 apis/inference/v1alpha1/defaults.go (setDefaultDAGConditions)
            Role(
                "worker", "Worker", starts_after="aimaster", default_replicas=1, scaffold_replicas=2
            ),
            # A job without an AIMaster never gets a status ("Job must contain AIMaster replica
            # spec"); the AIMaster always has one replica.
            # KubeDL v0.5.0 controllers/elasticbatch/status.go, apis/inference/v1alpha1/defaults.go
            Role(
                "aimaster",
                "AIMaster",
                required=True,
                singleton=True,
                default_replicas=1,
                scaffold_replicas=1,
                required_reason="KubeDL v0.5.0 never writes a status for an ElasticBatchJob "
                "without an AIMaster",
            ),
        ),
        primary_role="worker",
        env_scheme=EnvScheme.ELASTICBATCH,
        injected=(
            # KubeDL's spelling, on the elasticbatch container. KubeDL v0.5.0
            # controllers/elasticbatch/elasticbatchjob_controller.go, elasticbatch.go
            Injected(
                "ElASTICBATCH_CONFIG",
                ("worker",),
                '{"task": {"type": "worker", "index": i}, "environment": "cloud"}',
            ),
            # KubeDL v0.5.0 apis/inference/v1alpha1/defaults.go (setDefaultAIMasterEnv)
            Injected("JOB_NAME", ("aimaster",), "the job's name (the contract's JOB_NAME too)"),
            Injected("NAMESPACE", ("aimaster",), "the job's namespace"),
            Injected("JOB_TYPE", ("aimaster",), "ELASTICBATCH"),
        ),
        success=SuccessRule.AIMASTER_OR_ALL_WORKERS,
        run_policy=RunPolicyPlace.INLINE,  # apis/inference/v1alpha1/elasticbatchjob_types.go
        overwrites_template_restart_policy=True,
        recreates_only_failed_pod=True,
        operator_ttl_seconds=None,
        default_ttl_seconds=None,
        scaffold_image="python:3.11-slim",
        # Until the job carries this annotation the operator creates no worker pod and writes no
        # status. KubeDL v0.5.0 pkg/job_controller/job.go (ReconcileJobs, "Hack for AIMaster")
        readiness_annotation=("aimaster", "ready"),
    ),
    JobType.MPI: JobKind(
        job_type=JobType.MPI,
        api_version="training.kubedl.io/v1alpha1",
        kind="MPIJob",
        template="mpijob.yaml.j2",
        replicas_key="mpiReplicaSpecs",
        # KubeDL v0.5.0 apis/training/v1alpha1/mpijob_constants.go. Ranks talk through
        # kubexec (kubectl exec), so trainstack gives the container no port.
        container="mpi",
        port_name=None,
        port=None,
        roles=(
            # The launcher waits for the workers to be Running.
            # KubeDL v0.5.0 apis/training/v1alpha1/mpijob_default.go,
            # controllers/mpi/mpijob_controller.go (GetReconcileOrders)
            Role(
                "launcher",
                "Launcher",
                required=True,
                singleton=True,
                starts_after="worker",
                default_replicas=1,
                scaffold_replicas=1,
            ),
            # Ranks reach the workers through `kubectl exec` (kubexec.sh); a worker with no
            # command gets `sleep 365d`. KubeDL v0.5.0 controllers/mpi/mpijob_controller.go
            Role(
                "worker",
                "Worker",
                required=True,
                default_replicas=1,
                scaffold_replicas=2,
                runs_command=False,
            ),
        ),
        primary_role="launcher",
        env_scheme=EnvScheme.MPI,
        # On every container of the launcher.
        # KubeDL v0.5.0 controllers/mpi/mpijob_controller.go (setupLauncherMainContainers)
        injected=(
            Injected(
                "OMPI_MCA_plm_rsh_agent",
                ("launcher",),
                "/etc/mpi/kubexec.sh",
                default_container_only=False,
            ),
            Injected(
                "OMPI_MCA_orte_default_hostfile",
                ("launcher",),
                "/etc/mpi/hostfile",
                default_container_only=False,
            ),
        ),
        success=SuccessRule.LAUNCHER,
        run_policy=RunPolicyPlace.NESTED,
        overwrites_template_restart_policy=True,
        recreates_only_failed_pod=True,
        operator_ttl_seconds=None,
        default_ttl_seconds=None,
        scaffold_image="horovod/horovod:0.28.1",
        scaffold_launch="mpirun -np 2 python main.py",
        # KubeDL v0.5.0 controllers/mpi/mpi_config.go (jobConfigName, newJobConfigMap: created
        # only when absent, so a ConfigMap of that name made by anyone else wins)
        operator_config_map_suffix="-config",
        operator_config_map_keys=(MPI_KUBEXEC, MPI_HOSTFILE),
        exec_role="launcher",
    ),
    JobType.CUSTOM: JobKind(
        job_type=JobType.CUSTOM,
        api_version="batch/v1",
        kind="Job",
        template="job.yaml.j2",
        replicas_key=None,
        container="main",
        port_name=None,
        port=None,
        roles=(Role("worker", "worker", default_replicas=1, scaffold_replicas=1),),
        primary_role="worker",
        env_scheme=EnvScheme.INDEXED_JOB,
        injected=(
            # Kubernetes sets it in every container of an Indexed Job's pods.
            Injected(
                "JOB_COMPLETION_INDEX",
                ("worker",),
                "the pod's completion index",
                default_container_only=False,
            ),
        ),
        success=SuccessRule.ALL_COMPLETIONS,
        run_policy=RunPolicyPlace.JOB_SPEC,
        # A batch/v1 Job requires the template's restartPolicy (Never or OnFailure).
        overwrites_template_restart_policy=False,
        recreates_only_failed_pod=True,  # a failed index gets a new pod; the others run on
        operator_ttl_seconds=None,
        default_ttl_seconds=None,
        scaffold_image="python:3.11-slim",
    ),
}


def job_kind(job_type: JobType | str) -> JobKind:
    """The record for a job type (its enum or its spec spelling)."""
    return KINDS[JobType(job_type)]


# --- reserved environment names ------------------------------------------------------------
# trainstack's own contract (docs/contract.md), the same for every kind.
CONTRACT_PREFIXES: tuple[str, ...] = ("PAI_", "TRAINSTACK_")
CONTRACT_NAMES: tuple[str, ...] = (
    "METRICS",
    "MODEL",
    "JOB_NAME",
    "CUSTOM_PORTS",
    "NVIDIA_VISIBLE_DEVICES",
)


def operator_env(job_type: JobType | str) -> frozenset[str]:
    """Every name the operator (or Kubernetes) injects into some replica of this kind."""
    return frozenset(job_kind(job_type).injected_names())


def reserved_env(job_type: JobType | str) -> frozenset[str]:
    """Names a run of this kind may not set in spec.env or spec.secretEnv (besides the
    CONTRACT_PREFIXES): the contract's and the operator's."""
    return frozenset(CONTRACT_NAMES) | operator_env(job_type)


def is_contract_env(name: str) -> bool:
    return name.startswith(CONTRACT_PREFIXES) or name in CONTRACT_NAMES
