"""The job types a component may declare (`spec.jobType`). A leaf module: the spec model and the
job-kind model both import it."""

from __future__ import annotations

import enum


class JobType(enum.StrEnum):
    TENSORFLOW = "tensorflow"
    PYTORCH = "pytorch"
    XGBOOST = "xgboost"
    ELASTICBATCH = "elasticbatch"
    MPI = "mpi"
    CUSTOM = "custom"
