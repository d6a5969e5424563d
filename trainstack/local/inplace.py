"""Restarts in place, which a replica's process outlives, so the supervisor cannot see them as
exits: the in-container launcher's hang restarts (read from its records, `<role>-<index>
.restarts.jsonl`) and a final hang that ended the replica, and torchElastic's restarts of the
agent's worker (trainstack.local.elastic). Recorded in the recovery history, never counted
against maxRestarts: KubeDL never sees them."""

from __future__ import annotations

from collections.abc import Sequence

from trainstack import recovery
from trainstack.local.elastic import ElasticWatch
from trainstack.local.launch import ReplicaLaunch
from trainstack.registry.model import Restart


class InPlace:
    def __init__(
        self, launches: Sequence[ReplicaLaunch], tag: str, elastic_restarts: int | None
    ) -> None:
        self._launches = {launch.key: launch for launch in launches}
        # how far each replica's launcher record has been read
        self._read: dict[str, int] = {}
        # replicas whose launcher gave up on a hung command: what it said
        self.hung: dict[str, str] = {}
        self._elastic = (
            None if elastic_restarts is None else ElasticWatch(launches, tag, elastic_restarts)
        )

    def started(self, key: str) -> None:
        """The replica was started (again): what its last attempt left is gone."""
        self.hung.pop(key, None)
        if self._elastic is not None:
            self._elastic.forget(key)

    def read(self) -> list[Restart]:
        """The restarts in place since the last look; a final hang goes into `hung`."""
        out = self._elastic.check() if self._elastic is not None else []
        for key, launch in self._launches.items():
            path = launch.restarts_path
            if path is None:
                continue
            try:
                with open(path, "rb") as f:
                    f.seek(self._read.get(key, 0))
                    data = f.read(1 << 20)
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self._read[key] = self._read.get(key, 0) + end
            for line in data[:end].splitlines():
                record = recovery.launcher_record(line, launch.role, launch.index)
                if record is not None and record.final is not None:
                    self.hung[key] = record.final
                if record is not None and record.restart is not None:
                    out.append(record.restart)
        return out
