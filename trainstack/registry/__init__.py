"""The run registry: a SQLite index of runs (local and deployed) under the state home."""

from trainstack.registry.dbfile import RegistryError, RegistryFullError
from trainstack.registry.home import state_home
from trainstack.registry.liveness import RunnerIdentity, current_runner
from trainstack.registry.model import (
    NewRun,
    ReplicaExit,
    Restart,
    RunKind,
    RunRecord,
    RunStatus,
)
from trainstack.registry.store import Registry, RunFilter

__all__ = [
    "NewRun",
    "Registry",
    "RegistryError",
    "RegistryFullError",
    "ReplicaExit",
    "Restart",
    "RunFilter",
    "RunKind",
    "RunRecord",
    "RunStatus",
    "RunnerIdentity",
    "current_runner",
    "state_home",
]
