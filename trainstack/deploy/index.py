"""Our own index of deployed runs -> their stacks (``stacks.json`` under the state home).

Listing stacks through the CLI is slow and backend-dependent; this file answers "which stack is
run X?" instantly. Writes are whole-file replacements under an exclusive lock, so concurrent
deploys of different runs cannot lose each other's entries.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainstack.errors import NotFoundError, UserError
from trainstack.infra.configread import did_you_mean

INDEX_FILE = "stacks.json"


@dataclass(frozen=True)
class StackEntry:
    run: str
    env: str
    stack: str
    project: str
    backend: str
    component: str
    version: str
    experiment: str | None
    spec_path: str | None
    registry_id: str | None
    updated_at: float = field(default_factory=time.time)
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.env}/{self.run}"


class RunIndex:
    def __init__(self, home: Path) -> None:
        self.path = home / INDEX_FILE
        self._lock_path = home / (INDEX_FILE + ".lock")

    @contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            yield data
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".stacks-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2, sort_keys=True)
            os.replace(tmp, self.path)

    def _read(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise UserError(f"{self.path}: the run index is not valid JSON ({err.msg})") from None
        return data if isinstance(data, dict) else {}

    def put(self, entry: StackEntry) -> None:
        with self._locked() as data:
            data[entry.key] = asdict(entry)

    def remove(self, entry: StackEntry) -> None:
        with self._locked() as data:
            data.pop(entry.key, None)

    def entries(self) -> list[StackEntry]:
        return [StackEntry(**v) for _, v in sorted(self._read().items())]

    def find(self, run: str, env: str | None = None) -> StackEntry:
        """The stack of ``run`` (in ``env``, when it was deployed to several environments)."""
        entries = self.entries()
        found = [e for e in entries if e.run == run and (env is None or e.env == env)]
        if len(found) == 1:
            return found[0]
        if found:
            envs = ", ".join(e.env for e in found)
            raise UserError(f"run {run!r} is deployed in several environments ({envs})",
                            hint="name one with --env")
        where = f" in environment {env!r}" if env else ""
        raise NotFoundError(f"no deployed run {run!r}{where} in {self.path}",
                            hint=did_you_mean(run, {e.run for e in entries})
                            or "`trainstack deploy RUN.yaml --env ENV` deploys one")
