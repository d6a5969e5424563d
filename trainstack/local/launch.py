"""What the supervisor starts: one replica process, fully described, shell-free in our hands.

`argv` comes from the contract (`sh -c <command>`); the supervisor never builds a command line,
so no user value is ever evaluated by a shell on our side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainstack.local.memlimit import Limit


@dataclass(frozen=True)
class ReplicaLaunch:
    role: str
    index: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    log_path: Path
    # Where the in-container launcher records this replica's restarts in place (hangs); None
    # when the replica does not run behind it.
    restarts_path: Path | None = None
    # The size of the replica's own /dev/shm where it runs as a pod (trainstack.local.podns),
    # which the kernel enforces; None where it shares this machine's (memlimit watches it).
    pod_shm: Limit | None = None

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"
