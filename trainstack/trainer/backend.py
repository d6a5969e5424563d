"""Which operator runs an environment's jobs (`trainstack:operator` in `Pulumi.<env>.yaml`) and
which job types each can run.

KubeDL is the default, so an environment that names no operator runs as it always did; Kubeflow
Trainer v2 runs what the platform installs a runtime for (trainstack.trainer.runtimes.why_not
says why not the others), and a `custom` run as the Kubernetes Job it is on KubeDL too.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from trainstack.errors import ConfigError, UserError
from trainstack.kubedl.jobtype import JobType
from trainstack.platformnames import OUT_OPERATOR
from trainstack.trainer.runtimes import why_not


class Operator(enum.StrEnum):
    KUBEDL = "kubedl"
    TRAINER = "trainer"


DEFAULT_OPERATOR = Operator.KUBEDL
# The key under the platform project's namespace (`trainstack:operator`), and the platform's
# output of the same name.
OPERATOR_KEY = OUT_OPERATOR


def parse_operator(value: object, *, source: str, key: str) -> Operator:
    """An environment's operator, `value` as its file gives it (None: unset, the default); any
    other value is one ConfigError naming the file, the key and the values it may take."""
    if value is None:
        return DEFAULT_OPERATOR
    try:
        return Operator(str(value))
    except ValueError:
        allowed = " or ".join(o.value for o in Operator)
        raise ConfigError(
            f"{source}: {key}: expected {allowed}, got {str(value)!r}",
            hint=f"{key} picks the operator that runs the environment's jobs "
            f"(default {DEFAULT_OPERATOR.value})",
        ) from None


def runs(operator: Operator, job_type: JobType | str) -> bool:
    """Whether an environment of this operator can run a job of this type."""
    kind = JobType(job_type)
    if operator is Operator.KUBEDL:
        return True
    return why_not(kind) is None


def check_runs(operator: Operator, job_type: JobType | str, env: str, able: Iterable[str]) -> None:
    """Refuse a run its environment's operator cannot run; `able` are the environments that can."""
    kind = JobType(job_type)
    if runs(operator, kind):
        return
    others = sorted(able)
    where = ", ".join(others) if others else "none in this project (set trainstack:operator kubedl)"
    raise UserError(
        f"environment {env!r} runs its jobs on {operator.value}, which cannot run a {kind} job: "
        f"{why_not(kind)}",
        hint=f"environments that can run it (operator kubedl): {where}",
    )
