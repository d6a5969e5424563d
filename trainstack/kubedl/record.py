"""The shape of a job-kind record (`JobKind`, its `Role`s, what the operator injects, and the
rules it follows): the types trainstack.kubedl.kinds fills in, one record per job type."""

from __future__ import annotations

import enum
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


class DeadlineClock(enum.Enum):
    """When the operator starts the clock of `activeDeadlineSeconds` (the run's `timeout`): it
    fails a job past its deadline only once `Status.StartTime` is set.
    KubeDL v0.5.0 pkg/job_controller/job.go:538-547 (pastActiveDeadline)"""

    # At the controller's first status update, before any pod is scheduled: time spent Pending
    # (scheduling, image pulls, the `prepare` init container) counts.
    # KubeDL v0.5.0 controllers/tensorflow/status.go:137, controllers/pytorch/status.go:40,
    # controllers/elasticbatch/status.go:40; Kubernetes' Job controller sets status.startTime
    # when it first syncs the Job (pkg/controller/job/job_controller.go).
    ACKNOWLEDGED = "job-acknowledged"
    # Once every replica of some role is active (for XGBoost: the master's pod, which the
    # workers wait for). KubeDL v0.5.0 controllers/xgboost/job.go:109-113
    ROLE_ACTIVE = "role-fully-active"
    # Never: the MPI controller sets no StartTime, so activeDeadlineSeconds is never enforced.
    # KubeDL v0.5.0 controllers/mpi/job.go:78-162 (UpdateJobStatus)
    NEVER = "never"


class DeletedPod(enum.Enum):
    """What the controller makes of a replica's pod deleted through the API (a preemption, a
    node drain, `kubectl delete`): the kubelet sends its containers SIGTERM, SIGKILL after the
    grace period, and the pod is removed (trainstack.kubedl.restart.deleted_pod_rule)."""

    # The pod is simply gone: the next reconcile creates it again (KubeDL v0.5.0
    # pkg/job_controller/pod.go:274-281), whatever the restart policy, counted nowhere. KubeDL
    # on Kubernetes before 1.27, whose kubelet removed a deleted pod without a terminal phase.
    RECREATED = "recreated"
    # The kubelet first gives the pod a terminal phase from its containers' exit: Failed, or
    # Succeeded when every container exited 0 (Kubernetes docs, "Pod Lifecycle", Pod phase:
    # "Since Kubernetes 1.27, the kubelet transitions deleted Pods ... to a terminal phase";
    # kubernetes/kubernetes#115331). KubeDL judges it as any exit (pkg/job_controller/
    # pod.go:389-398): under ExitCode a retryable code is failed over, otherwise the Failed pod
    # fails the job (e.g. controllers/pytorch/status.go:109-137). A Succeeded one counts for the
    # success rule and, removed, is created again if the job goes on (pod.go:274-281).
    EXIT_THEN_RECREATED = "exit-then-recreated"
    # Kubernetes' Job controller with a podFailurePolicy: it waits for the terminal phase and
    # judges the exit by the policy's rules; a Succeeded pod completes its index
    # (pkg/controller/job/job_controller.go, isPodFailed and onlyReplaceFailedPods).
    EXIT = "exit"
    # Kubernetes' Job controller without a podFailurePolicy: a pod that has a deletion
    # timestamp and has not Succeeded is failed at once, whatever its containers then exit with
    # ("Count deleted Pods as failures", pkg/controller/job/job_controller.go, isPodFailed),
    # and counts against backoffLimit.
    FAILED = "failed"


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
    # A run may not set it (spec.env would be silently replaced). False for a name the operator
    # sets on one role's container only as metadata, which the run's other roles may use as they
    # like: there the user's value holds, on that role the operator's wins, as on a cluster.
    reserved: bool = True


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
    # False: a failed pod of this role fails the job whatever its exit code, so ExitCode's
    # failover never applies; trainstack renders it `Never` under ExitCode and a local run does
    # not recreate it (trainstack.kubedl.restart).
    failover: bool = True

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
    # When the operator starts counting the run's timeout (activeDeadlineSeconds).
    deadline_clock: DeadlineClock = DeadlineClock.ACKNOWLEDGED
    # Where the operator never enforces the deadline: the role whose command trainstack runs
    # under the run's timeout itself (trainstack.contract.shell), the one whose exit ends the job.
    deadline_role: str | None = None

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
