"""What the run registry returns: frozen records, never rows or dicts."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType


class RunStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the runner died without recording an end

    @property
    def finished(self) -> bool:
        return self not in (RunStatus.PENDING, RunStatus.RUNNING)


class RunKind(enum.StrEnum):
    LOCAL = "local"
    CLUSTER = "cluster"


@dataclass(frozen=True, order=True)
class ReplicaExit:
    """The last exit code of one replica; `None` while it has not exited. `stopped`: the runner
    stopped it after the job had ended (a succeeded job's remaining replicas, as KubeDL deletes
    them), so its code (143, SIGTERM) is not a failure of its own."""

    role: str
    index: int
    exit_code: int | None
    stopped: bool = False

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"

    def state(self, finished: bool) -> str:
        """How the replica ended, in the words every view uses (`runs show`, the report, the
        console): a replica the runner stopped after the job had ended is not a failure of its
        own, whatever its code."""
        if self.stopped:
            return "stopped when the job ended"
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return "not recorded" if finished else "running"


@dataclass(frozen=True, order=True)
class Restart:
    """One restart in a run's recovery history: when, which replica, how its attempt ended
    (exit code, reason: `OOMKilled`, `Evicted`, `hung`, `preempted`, a signal's name or the exit
    code's meaning; trainstack.recovery), how long that attempt had run, and whether it counted
    against `faultTolerance.maxRestarts` (a hang restart in place does not, since KubeDL never
    sees it, nor does the recreation of a deleted pod that was only gone: a Succeeded one, or
    any on Kubernetes before 1.27)."""

    at: float
    role: str
    index: int
    exit_code: int | None
    reason: str
    detail: str = ""
    ran_seconds: float | None = None
    counted: bool = True

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"


def _empty_tags() -> Mapping[str, str]:
    return MappingProxyType({})


ParamValue = int | float | str | bool  # as trainstack.spec.model (the registry imports no specs)


def _empty_params() -> Mapping[str, ParamValue]:
    return MappingProxyType({})


@dataclass(frozen=True)
class NewRun:
    """What a caller knows about a run before it starts."""

    name: str
    component: str
    component_version: str
    kind: RunKind = RunKind.LOCAL
    job_type: str = ""
    experiment: str | None = None
    tags: Mapping[str, str] = field(default_factory=_empty_tags)
    spec_path: str | None = None
    stack_name: str | None = None
    outputs: Mapping[str, str] = field(default_factory=_empty_tags)  # output name -> URI
    parameters: Mapping[str, ParamValue] = field(default_factory=_empty_params)
    resumed_from: str | None = None  # the run whose checkpoints it starts from (--resume)


@dataclass(frozen=True)
class RunRecord:
    id: str
    name: str
    component: str
    component_version: str
    kind: RunKind
    job_type: str
    experiment: str | None
    tags: Mapping[str, str]
    status: RunStatus
    created_at: float
    started_at: float | None
    finished_at: float | None
    exits: tuple[ReplicaExit, ...]
    restarts: int
    run_dir: Path | None
    runner_pid: int | None
    runner_started_at: float | None
    stack_name: str | None
    spec_path: str | None
    reason: str | None
    outputs: Mapping[str, str] = field(default_factory=_empty_tags)  # output name -> URI
    parameters: Mapping[str, ParamValue] = field(default_factory=_empty_params)
    created_by: str | None = None  # the user who recorded it (None: before that was recorded)
    # A deployed run's shipped logs (infra/logplace) and its store's region: `logs` reads them
    # here once the run's stack is destroyed.
    log_place: str | None = None
    log_region: str | None = None
    resumed_from: str | None = None  # the id of the run whose checkpoints it started from

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        if self.finished_at is None:
            return None
        return self.finished_at - self.started_at
