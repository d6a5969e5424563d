"""The one model of how Kubeflow Trainer v2.3.0 (TrainJob over a ClusterTrainingRuntime, run as
a JobSet v0.12.0) runs trainstack's job types, and which operator an environment picks:
`runtime(job_type)` returns a type's record, `JOBSET` the rules every runtime runs under."""

from trainstack.trainer.backend import (
    DEFAULT_OPERATOR,
    OPERATOR_KEY,
    Operator,
    check_runs,
    parse_operator,
    runs,
)
from trainstack.trainer.jobset import JOBSET, pod_address, pod_hostname
from trainstack.trainer.record import (
    DependsOnStatus,
    FailureAction,
    JobSetRules,
    MLPolicy,
    ReplicatedJob,
    Runtime,
    SuccessOperator,
)
from trainstack.trainer.runtimes import (
    BATCH_JOB_TYPES,
    NO_RUNTIME,
    RUNTIME_KIND,
    RUNTIMES,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
    runtime,
)

__all__ = [
    "BATCH_JOB_TYPES",
    "DEFAULT_OPERATOR",
    "JOBSET",
    "NO_RUNTIME",
    "OPERATOR_KEY",
    "RUNTIMES",
    "RUNTIME_KIND",
    "TRAINJOB_API_VERSION",
    "TRAINJOB_KIND",
    "DependsOnStatus",
    "FailureAction",
    "JobSetRules",
    "MLPolicy",
    "Operator",
    "ReplicatedJob",
    "Runtime",
    "SuccessOperator",
    "check_runs",
    "parse_operator",
    "pod_address",
    "pod_hostname",
    "runs",
    "runtime",
]
