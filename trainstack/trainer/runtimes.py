"""One record per job type Kubeflow Trainer v2.3.0 runs for trainstack: every fact trainstack
relies on about the runtime a TrainJob names and what its plugin does.

Paths are in github.com/kubeflow/trainer at tag v2.3.0 (`Trainer v2.3.0 <path>:<line>`). A job
type with no record here has no Trainer runtime: `NO_RUNTIME` says why, and a run of it is
refused on an environment whose operator is Trainer (trainstack.trainer.backend).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainstack.errors import UserError
from trainstack.kubedl.jobtype import JobType
from trainstack.kubedl.pods import COMPLETION_INDEX_ANNOTATION
from trainstack.kubedl.record import Injected
from trainstack.platformnames import PRIORITIES
from trainstack.trainer.record import DependsOnStatus, MLPolicy, ReplicatedJob, Runtime
from trainstack.trainer.record import SuccessOperator as Success

# Trainer v2.3.0 pkg/apis/trainer/v1alpha1/groupversion_info.go:30, trainjob_types.go:26
TRAINJOB_API_VERSION = "trainer.kubeflow.org/v1alpha1"
TRAINJOB_KIND = "TrainJob"
# What `spec.runtimeRef.kind` defaults to: cluster-scoped, so a TrainJob in any namespace may
# name it. Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:172-177,
# trainingruntime_types.go:29, 38-43
RUNTIME_KIND = "ClusterTrainingRuntime"
# The replicated job so labelled takes the TrainJob's spec.trainer (image, command, args, env,
# numNodes). Trainer v2.3.0 pkg/constants/constants.go:41, 66;
# pkg/runtime/framework/plugins/jobset/builder.go:112-141
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
# The trainer container's name, which the plugins look for. Trainer v2.3.0
# pkg/constants/constants.go:69
NODE = "node"
# The port the torch and XGBoost plugins add to it and point the peers at.
# Trainer v2.3.0 pkg/constants/constants.go:72
TRAINER_PORT = 29500

# What the torch plugin names its variables (Trainer v2.3.0 pkg/constants/constants.go:190-203)
# and the XGBoost plugin its own (constants.go:268-278).
PET_NNODES = "PET_NNODES"
PET_NPROC_PER_NODE = "PET_NPROC_PER_NODE"
PET_NODE_RANK = "PET_NODE_RANK"
PET_MASTER_ADDR = "PET_MASTER_ADDR"
PET_MASTER_PORT = "PET_MASTER_PORT"
DMLC_TRACKER_URI = "DMLC_TRACKER_URI"
DMLC_TRACKER_PORT = "DMLC_TRACKER_PORT"
DMLC_TASK_ID = "DMLC_TASK_ID"
DMLC_NUM_WORKER = "DMLC_NUM_WORKER"

_INDEX = f"the pod's {COMPLETION_INDEX_ANNOTATION} annotation (its completion index)"
_RANK0 = "<job>-node-0-0.<job>: the pod of completion index 0 under the JobSet's Service"

RUNTIMES: Mapping[JobType, Runtime] = {
    JobType.PYTORCH: Runtime(
        job_type=JobType.PYTORCH,
        # Trainer v2.3.0 manifests/base/runtimes/torch_distributed.yaml:18, 22-24, 27-37
        runtime_name="torch-distributed",
        shipped=True,
        ml_policy=MLPolicy.TORCH,
        # The master is node 0 (PET_NODE_RANK 0, the PET_MASTER_ADDR pod) and worker i node
        # i + 1: numNodes is 1 + workers, as KubeDL ranks them (RANK 0, index + 1).
        replicated_jobs=(ReplicatedJob(NODE, ("master", "worker"), trainer_ancestor=True),),
        container=NODE,
        port=TRAINER_PORT,  # pkg/runtime/framework/plugins/torch/torch.go:202-203
        # Only on the trainer job's `node` container (other containers only through the runtime's
        # envInjection). Trainer v2.3.0 pkg/runtime/framework/plugins/torch/torch.go:138-177,
        # pkg/constants/constants.go:190-203
        injected=(
            Injected(PET_NNODES, ("master", "worker"), "numNodes (torch.go:146-148)"),
            Injected(
                PET_NPROC_PER_NODE,
                ("master", "worker"),
                "spec.trainer.numProcPerNode; else `auto` when resourcesPerNode asks for a GPU, "
                "else its CPU count, at least 1 (torch.go:121-135)",
            ),
            Injected(PET_NODE_RANK, ("master", "worker"), _INDEX + " (torch.go:152-156)"),
            Injected(PET_MASTER_ADDR, ("master", "worker"), _RANK0 + " (torch.go:159-162)"),
            Injected(PET_MASTER_PORT, ("master", "worker"), "29500 (torch.go:163-165)"),
        ),
        # Trainer v2.3.0 pkg/constants/constants.go:299-300; torch.go:65-77
        reserved=frozenset(
            {PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR} | {PET_MASTER_PORT}
        ),
        # No successPolicy: JobSet's default, every Job, so every node must exit 0.
        success_operator=Success.ALL,
        # KubeDL's PyTorchJob: RANK 0 on the master, index + 1 on worker i, WORLD_SIZE the pods
        # (trainstack.kubedl.kinds): the node rank and numNodes here, the master node 0.
        kubedl_env=(
            ("MASTER_ADDR", PET_MASTER_ADDR),
            ("MASTER_PORT", PET_MASTER_PORT),
            ("WORLD_SIZE", PET_NNODES),
            ("RANK", PET_NODE_RANK),
        ),
    ),
    JobType.XGBOOST: Runtime(
        job_type=JobType.XGBOOST,
        # Trainer v2.3.0 manifests/base/runtimes/xgboost_distributed.yaml:18, 22-24, 27-38
        runtime_name="xgboost-distributed",
        shipped=True,
        ml_policy=MLPolicy.XGBOOST,
        # The master is node 0, whose pod the tracker address names (DMLC_TASK_ID 0); worker i
        # is node i + 1.
        replicated_jobs=(ReplicatedJob(NODE, ("master", "worker"), trainer_ancestor=True),),
        container=NODE,
        port=TRAINER_PORT,  # pkg/runtime/framework/plugins/xgboost/xgboost.go:141-144
        # On the trainer job's `node` container. Trainer v2.3.0
        # pkg/runtime/framework/plugins/xgboost/xgboost.go:92-139,
        # pkg/constants/constants.go:268-278
        injected=(
            Injected(DMLC_TRACKER_URI, ("master", "worker"), _RANK0 + " (xgboost.go:115-124)"),
            Injected(DMLC_TRACKER_PORT, ("master", "worker"), "29500 (xgboost.go:125-128)"),
            Injected(DMLC_TASK_ID, ("master", "worker"), _INDEX + " (xgboost.go:129-134)"),
            Injected(
                DMLC_NUM_WORKER,
                ("master", "worker"),
                "numNodes × the GPUs resourcesPerNode asks for, or × 1 without GPUs "
                "(xgboost.go:100-113)",
            ),
        ),
        # Trainer v2.3.0 pkg/constants/constants.go:302-303; xgboost.go:59-68
        reserved=frozenset({DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER}),
        success_operator=Success.ALL,
    ),
    JobType.MPI: Runtime(
        job_type=JobType.MPI,
        # Trainer v2.3.0 ships no plain MPI runtime: its MPI-policy runtimes are
        # deepspeed-distributed and mlx-distributed (manifests/base/runtimes/kustomization.yaml:
        # 17-23), each a `node` job running sshd and a `launcher` job that waits for the nodes to
        # be Ready, the JobSet succeeding when the launcher does (deepspeed_distributed.yaml:
        # 22-77). A run renders its own runtime of that shape (`per_run`; trainstack.trainer.mpi):
        # the workers' image, resources and env are the run's.
        runtime_name="trainstack-mpi",
        shipped=False,
        per_run=True,
        ml_policy=MLPolicy.MPI,
        # JobSet refuses dependsOn on the first replicated job and on one not before it (JobSet
        # v0.12.0 pkg/webhooks/jobset_webhook.go:177-179, 258-262): the nodes come first.
        replicated_jobs=(
            ReplicatedJob(NODE, ("worker",), trainer_ancestor=False, runs_command=False),
            ReplicatedJob(
                "launcher",
                ("launcher",),
                trainer_ancestor=True,
                depends_on=((NODE, DependsOnStatus.READY),),
            ),
        ),
        # The plugin mounts the hostfile and sets the OMPI_* variables only on a container named
        # `node` in the launcher job (mpi.go:189-228); the SSH keys on every `node` container of
        # both jobs (mpi.go:141-200).
        container=NODE,
        port=None,
        # On the launcher's `node` container; the hostfile (ConfigMap <job>-mpi-hostfile, key
        # `hostfile`, at /etc/mpi) lists `<pod address> slots=<numProcPerNode>` per node pod,
        # the pod sets in the runtime's order (mpi.go:171-187, 316-346).
        # Trainer v2.3.0 pkg/constants/constants.go:159-187
        injected=(
            Injected("OMPI_MCA_orte_default_hostfile", ("launcher",), "/etc/mpi/hostfile"),
            Injected("OMPI_MCA_orte_keep_fqdn_hostnames", ("launcher",), "true"),
            Injected(
                "OMPI_MCA_orte_set_default_slots",
                ("launcher",),
                "mlPolicy.mpi.numProcPerNode (at 1, the GPUs a node asks for when more than "
                "one) (mpi.go:128-139)",
            ),
            Injected("OMPI_MCA_plm_rsh_args", ("launcher",), "-o ConnectionAttempts=10"),
        ),
        # Trainer v2.3.0 pkg/constants/constants.go:305-306; mpi.go:95-107
        reserved=frozenset(
            {"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args"}
            | {"OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"}
        ),
        # The nodes' sshd never exits: only the launcher decides success.
        success_operator=Success.ALL,
        success_targets=("launcher",),
        # runLauncherAsNode: the launcher's pod is a host of the hostfile with the workers', and
        # numNodes counts it (mpi.go:116-125, 344-346), as KubeDL v0.5.0's MPIJob lists its
        # launcher in the hostfile with slotsPerWorker slots (controllers/mpi/mpi_config.go:
        # 86-88; the launcher-runs-workloads flag defaults to true, mpijob_controller.go:55):
        # cifar-horovod's launcher is a GPU host like its workers. The order differs: Trainer
        # lists the nodes' pods first, then the launcher's (the runtime's order), where KubeDL
        # lists the launcher first, so rank 0 is on worker 0, not the launcher.
        launcher_is_node=True,
    ),
}

# Trainer v2.3.0's mlPolicy knows torch, mpi, flux, jax and xgboost only
# (pkg/apis/trainer/v1alpha1/trainingruntime_types.go:186-206): no plugin computes TF_CONFIG or
# runs an ElasticBatch AIMaster. A `custom` run stays a Kubernetes Indexed Job on either backend.
NO_RUNTIME: Mapping[JobType, str] = {
    JobType.TENSORFLOW: "Kubeflow Trainer v2 has no TensorFlow runtime (no plugin sets TF_CONFIG)",
    JobType.ELASTICBATCH: "Kubeflow Trainer v2 has no ElasticBatch runtime (no AIMaster)",
}
BATCH_JOB_TYPES: frozenset[JobType] = frozenset({JobType.CUSTOM})


def installed() -> list[tuple[Runtime, int | None]]:
    """The ClusterTrainingRuntimes a Trainer environment's platform installs, as (record,
    priority): each shipped record without a priority, then at every trainstack PriorityClass
    (`Runtime.name_at`: a TrainJob cannot set a priority class itself). A `per_run` record's
    runtime comes with each run instead."""
    return [
        (r, p)
        for r in RUNTIMES.values()
        if r.shipped and not r.per_run
        for p in (None, *PRIORITIES)
    ]


def why_not(job_type: JobType) -> str | None:
    """Why an environment on Trainer cannot run a job of this type; None when it can."""
    if job_type in BATCH_JOB_TYPES:
        return None
    if job_type in RUNTIMES and (RUNTIMES[job_type].shipped or RUNTIMES[job_type].per_run):
        return None
    return NO_RUNTIME[job_type]


def runtime(job_type: JobType | str) -> Runtime:
    """The Trainer runtime a job type renders for; a UserError when Trainer has none."""
    kind = JobType(job_type)
    if kind in RUNTIMES:
        return RUNTIMES[kind]
    why = NO_RUNTIME.get(kind, "it runs as a Kubernetes Job, not a TrainJob")
    raise UserError(f"a {kind} job has no Kubeflow Trainer runtime: {why}")
