"""What the supervisor (trainstack.local.supervisor) is told and what it tells: the job's
restart policy as the operator applies it (`Policy`, `RestartScope`), its end (`Outcome`) and
what it reports on the way (`Observer`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from trainstack.kubedl import DeletedPod
from trainstack.local.memlimit import OverLimit
from trainstack.local.procgroup import Replica
from trainstack.registry.model import ReplicaExit, Restart, RunStatus


class RestartScope(enum.StrEnum):
    """What a failure restarts: the failed replica alone (KubeDL's failover deletes only the
    failed pod), or the whole set (JobSet's RestartJobSet recreates every Job)."""

    REPLICA = "replica"
    SET = "set"


@dataclass(frozen=True)
class Policy:
    # How many recreations the job may have in all (jobplan derives it from maxRestarts the way
    # the operator counts; `limit_text` says what the user wrote, for messages).
    max_restarts: int = 0
    unconditional: bool = False
    limit_text: str = ""
    timeout_seconds: float | None = None
    grace_seconds: float = 10.0
    # After a first failure, how long to wait for other replicas to fail on their own, so that a
    # peer's "connection reset" exit does not hide the SIGKILL that caused it.
    settle_seconds: float = 1.0
    # The job succeeds when every replica (key "role-index") of any one of these sets has exited
    # 0; none given means every replica.
    success: tuple[frozenset[str], ...] = ()
    # role -> roles whose replicas must all have started before any of its replicas starts.
    start_after: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # role -> why its failures are final whatever the exit code (a role the operator never
    # fails over: the ElasticBatch AIMaster, the MPI launcher; trainstack.kubedl.restart).
    final_roles: Mapping[str, str] = field(default_factory=dict)
    # role -> how a pod deleted through the API is judged (trainstack.kubedl.DeletedPod, from
    # the kind and the platform's minimum Kubernetes version: jobplan); a role not named here
    # is recreated uncounted.
    deleted_pods: Mapping[str, DeletedPod] = field(default_factory=dict)
    # SET: every failure, whatever its code, and every deleted or evicted pod restarts all the
    # replicas, one restart each time; `max_restarts` counts those.
    scope: RestartScope = RestartScope.REPLICA
    # spec.torchElastic's maxRestarts: every replica runs torchrun's agent, whose restarts of
    # its worker in place are watched for (trainstack.local.elastic); None without it.
    elastic_restarts: int | None = None

    @property
    def limit(self) -> str:
        return self.limit_text or f"maxRestarts: {self.max_restarts}"


@dataclass(frozen=True)
class Outcome:
    status: RunStatus
    reason: str
    exits: tuple[ReplicaExit, ...]
    restarts: int


class Observer(Protocol):
    def started(self, replica: Replica) -> None: ...

    def exited(self, replica: Replica, exit_code: int) -> None: ...

    def stopped(self, replica: Replica, exit_code: int) -> None: ...

    def restarting(self, restarts: int, reason: str) -> None: ...

    def out_of_memory(self, replica: Replica, over: OverLimit) -> None: ...

    def restarted(self, restart: Restart) -> None: ...

    def missed(self, text: str) -> None: ...


class _NullObserver:
    def started(self, replica: Replica) -> None:
        pass

    def exited(self, replica: Replica, exit_code: int) -> None:
        pass

    def stopped(self, replica: Replica, exit_code: int) -> None:
        pass

    def restarting(self, restarts: int, reason: str) -> None:
        pass

    def out_of_memory(self, replica: Replica, over: OverLimit) -> None:
        pass

    def restarted(self, restart: Restart) -> None:
        pass

    def missed(self, text: str) -> None:
        pass
