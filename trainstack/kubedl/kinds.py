"""One record per job type: every fact trainstack relies on about how KubeDL v0.5.0 (or, for
`custom`, Kubernetes' Indexed Job) runs it.

Validation, the contract, the renderer, the local runner, `trainstack env` and `trainstack init`
all read these records; nothing else in trainstack keeps a per-kind table. Each operator fact
names the KubeDL v0.5.0 file it comes from (paths in github.com/kubedl-io/kubedl at v0.5.0).
Adding a job kind means adding one `JobKind` here (and a template only when its shape is new).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainstack.contractnames import PAI_PREFIX, TRAINSTACK_PREFIX
from trainstack.kubedl.jobtype import JobType
from trainstack.kubedl.pods import MPI_HOSTFILE, MPI_KUBEXEC
from trainstack.kubedl.record import (
    DeadlineClock,
    EnvScheme,
    Injected,
    JobKind,
    Role,
    RunPolicyPlace,
    SuccessRule,
)

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
            # Both roles get Services (KubeDL v0.5.0 pkg/job_controller/job.go,
            # shouldCreateService); reconciled Master, then Worker
            # (controllers/xgboost/xgboostjob_controller.go:204, GetReconcileOrders), and the
            # workers' DAG condition (below) waits for the master to be Running.
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
        # The clock starts once a role is fully active: the master's pod Running.
        # KubeDL v0.5.0 controllers/xgboost/job.go:109-113
        deadline_clock=DeadlineClock.ROLE_ACTIVE,
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
                # A failed AIMaster pod fails the job: the "restarting" branch is only for
                # other replica types, so under ExitCode its pod is deleted for a failover
                # that never comes. KubeDL v0.5.0 controllers/elasticbatch/status.go:108-109
                failover=False,
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
            # Only the AIMaster's elasticbatch container gets these: a run's workers may use the
            # names; on the AIMaster KubeDL's value wins, locally as on a cluster.
            Injected("NAMESPACE", ("aimaster",), "the job's namespace", reserved=False),
            Injected("JOB_TYPE", ("aimaster",), "ELASTICBATCH", reserved=False),
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
                # A failed launcher pod fails the MPIJob whatever the restart policy: the
                # launcher branch of UpdateJobStatus reads no `restart` flag, so under ExitCode
                # its pod is deleted for a failover that never comes, and its log with it.
                # KubeDL v0.5.0 controllers/mpi/job.go:103-124
                failover=False,
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
        # Containers often run as root, where Open MPI's mpirun refuses to start without
        # --allow-run-as-root (or OMPI_ALLOW_RUN_AS_ROOT=1 and _CONFIRM=1); with it, it runs as
        # root and as a user alike. The local runner adds nothing: a pod's mpirun gets no more.
        scaffold_launch="mpirun --allow-run-as-root -np 2 python main.py",
        # KubeDL v0.5.0 controllers/mpi/mpi_config.go (jobConfigName, newJobConfigMap: created
        # only when absent, so a ConfigMap of that name made by anyone else wins)
        operator_config_map_suffix="-config",
        operator_config_map_keys=(MPI_KUBEXEC, MPI_HOSTFILE),
        exec_role="launcher",
        # No StartTime, so no deadline (controllers/mpi/job.go:78, UpdateJobStatus sets none;
        # pkg/job_controller/job.go:539 pastActiveDeadline is then false): the launcher, whose
        # exit decides the job, runs its command under the run's timeout itself.
        deadline_clock=DeadlineClock.NEVER,
        deadline_role="launcher",
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
CONTRACT_PREFIXES: tuple[str, ...] = (PAI_PREFIX, TRAINSTACK_PREFIX)
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
    CONTRACT_PREFIXES): the contract's and the operator's reserved ones."""
    reserved = {i.name for i in job_kind(job_type).injected if i.reserved}
    return frozenset(CONTRACT_NAMES) | frozenset(reserved)


def operator_wins(job_type: JobType | str, role: str) -> frozenset[str]:
    """The unreserved names the operator sets on `role`: a run's value for them reaches the
    other roles, and is replaced on this one."""
    return frozenset(
        i.name for i in job_kind(job_type).injected if not i.reserved and role in i.roles
    )


def is_contract_env(name: str) -> bool:
    return name.startswith(CONTRACT_PREFIXES) or name in CONTRACT_NAMES
