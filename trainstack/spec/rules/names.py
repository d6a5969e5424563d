"""A run's name, and a sweep's (its trials' names begin with it), must already be the Kubernetes
name it is deployed under. Names derived by lower-casing and '_' → '-' collide across stacks:
`Mnist_Baseline_01` and `mnist-baseline-01` are two stacks writing one job, its ConfigMaps and
claims, and the second deploy fails half-way with AlreadyExists. Refused here, with what the name
would have become, rather than renamed behind the user's back."""

from __future__ import annotations

import re

from trainstack.errors import Diagnostic
from trainstack.k8snames import MAX_JOB_NAME, dns_label, job_name
from trainstack.spec.rules.raw import section
from trainstack.spec.schema import MAX_SWEEP_TRIALS, RUN_NAME, SWEEP_NAME
from trainstack.yamlsource import SourceDoc

# The longest trial suffix a sweep's name must leave room for (`-t9999`: sweep/trialspec).
_TRIAL_SUFFIX = f"-t{MAX_SWEEP_TRIALS - 1:03d}"
_RULES = (
    "lowercase letters, digits and '-', starting with a letter and ending with a letter or digit"
)


def run_name(doc: SourceDoc) -> list[Diagnostic]:
    name = section(doc.data, "metadata").get("name")
    if not isinstance(name, str) or not re.fullmatch(RUN_NAME, name) or job_name(name) == name:
        return []
    return [
        doc.diag(
            ("metadata", "name"),
            f"run name {name!r} is not a Kubernetes name; it would be deployed as "
            f"{job_name(name)!r}",
            hint=f"name it {job_name(name)!r}: {_RULES}, at most {MAX_JOB_NAME} characters "
            "(names that differ only in case or '_'/'-' would share one job)",
            code="run-name",
        )
    ]


def sweep_name(doc: SourceDoc) -> list[Diagnostic]:
    name = section(doc.data, "metadata").get("name")
    if not isinstance(name, str) or not re.fullmatch(SWEEP_NAME, name):
        return []
    trial = name + _TRIAL_SUFFIX
    if job_name(trial) == trial:
        return []
    room = MAX_JOB_NAME - len(_TRIAL_SUFFIX)
    better = dns_label(name, max_len=room)
    return [
        doc.diag(
            ("metadata", "name"),
            f"sweep name {name!r} does not make Kubernetes names for its trials: "
            f"{trial!r} would be deployed as {job_name(trial)!r}",
            hint=f"name it {better!r}: {_RULES}, at most {room} characters",
            code="run-name",
        )
    ]
