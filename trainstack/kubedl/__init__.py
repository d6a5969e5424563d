"""The one model of how KubeDL v0.5.0 runs each job type (docs/kubedl.md): `job_kind(job_type)`
returns its `JobKind`; `reserved_env(job_type)` the names a run may not set."""

from trainstack.kubedl.jobtype import JobType
from trainstack.kubedl.kinds import (
    CONTRACT_NAMES,
    CONTRACT_PREFIXES,
    KINDS,
    is_contract_env,
    job_kind,
    operator_env,
    operator_wins,
    reserved_env,
)
from trainstack.kubedl.pods import (
    CLEAN_POD_POLICY,
    COMPLETION_INDEX_ANNOTATION,
    MPI_CONFIG_DIR,
    MPI_HOSTFILE,
    MPI_KUBEXEC,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    RETRYABLE_EXIT_CODES,
    deleted_when_job_ends,
    indexed_job_hostname,
    mpi_hostfile,
    pod_name,
)
from trainstack.kubedl.record import (
    DeadlineClock,
    EnvScheme,
    Injected,
    JobKind,
    Role,
    RunPolicyPlace,
    SuccessRule,
)

__all__ = [
    "CLEAN_POD_POLICY",
    "COMPLETION_INDEX_ANNOTATION",
    "CONTRACT_NAMES",
    "CONTRACT_PREFIXES",
    "KINDS",
    "MPI_CONFIG_DIR",
    "MPI_HOSTFILE",
    "MPI_KUBEXEC",
    "REPLICA_INDEX_LABEL",
    "REPLICA_TYPE_LABEL",
    "RETRYABLE_EXIT_CODES",
    "DeadlineClock",
    "EnvScheme",
    "Injected",
    "JobKind",
    "JobType",
    "Role",
    "RunPolicyPlace",
    "SuccessRule",
    "deleted_when_job_ends",
    "indexed_job_hostname",
    "is_contract_env",
    "job_kind",
    "mpi_hostfile",
    "operator_env",
    "operator_wins",
    "pod_name",
    "reserved_env",
]
