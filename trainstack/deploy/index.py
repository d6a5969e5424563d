"""Which stack is run X: the backend's stack tags (shared), cached in ``stacks.json`` (per user).

The source of truth is the backend: every run stack carries ``trainstack:*`` tags (run, env,
job coordinates, spec digest), so anyone on the same backend finds, watches and destroys a run
(``backend_entries``). This user's ``stacks.json`` under the state home answers "which stack is
run X?" without a CLI round trip and remembers the registry record of runs deployed from here.
Writes are whole-file replacements under an exclusive lock, so concurrent deploys of different
runs cannot lose each other's entries.
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
from typing import TYPE_CHECKING, Any

from trainstack.errors import NotFoundError, UserError
from trainstack.infra.configread import did_you_mean

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings
    from trainstack.spec.model import Run

INDEX_FILE = "stacks.json"
TAG = "trainstack:"
# tag (after the prefix) -> the StackEntry.outputs key it fills
_JOB_TAGS = {"job": "jobName", "namespace": "namespace", "kind": "kind", "apiVersion": "apiVersion"}


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
    spec_hash: str | None = None
    team: str | None = None

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
        return self.pick(self.entries(), run, env, where=str(self.path))

    @staticmethod
    def pick(entries: list[StackEntry], run: str, env: str | None, *, where: str) -> StackEntry:
        found = [e for e in entries if e.run == run and (env is None or e.env == env)]
        if len(found) == 1:
            return found[0]
        if found:
            envs = ", ".join(e.env for e in found)
            raise UserError(
                f"run {run!r} is deployed in several environments ({envs})",
                hint="name one with --env",
            )
        in_env = f" in environment {env!r}" if env else ""
        raise NotFoundError(
            f"no deployed run {run!r}{in_env} in {where}",
            hint=did_you_mean(run, {e.run for e in entries})
            or "`trainstack deploy RUN.yaml --env ENV` deploys one",
        )


def run_tags(run: Run, env: str, job: Mapping[str, str]) -> dict[str, str]:
    """The tags a run stack carries (Pulumi refuses empty values: absent ones are left out)."""
    values = {
        "run": run.name,
        "env": env,
        "component": run.component.name,
        "version": run.component.version,
        "experiment": run.experiment,
        "team": run.tags.get("team"),
        "specHash": job.get("specHash"),
        **{tag: job.get(key) for tag, key in _JOB_TAGS.items()},
    }
    return {TAG + k: str(v) for k, v in values.items() if v}


def entry_from_tags(stack: str, tags: Mapping[str, str], backend: str) -> StackEntry | None:
    """A run stack's entry read back from its tags; None for a stack without them."""
    got = {k.removeprefix(TAG): v for k, v in tags.items() if k.startswith(TAG)}
    if not got.get("run") or not got.get("env"):
        return None
    from trainstack.infra import names

    return StackEntry(
        run=got["run"],
        env=got["env"],
        stack=stack,
        project=names.RUNS_PROJECT,
        backend=backend,
        component=got.get("component", "?"),
        version=got.get("version", "?"),
        experiment=got.get("experiment"),
        spec_path=None,
        registry_id=None,
        updated_at=0.0,
        outputs={key: got[tag] for tag, key in _JOB_TAGS.items() if tag in got},
        spec_hash=got.get("specHash"),
        team=got.get("team"),
    )


def backend_entries(settings: DeploySettings, command: auto.PulumiCommand) -> list[StackEntry]:
    """Every run stack in the backend, from its tags (one ``stack ls`` + one ``tag ls`` each)."""
    from trainstack.deploy.workspace import runs_workspace

    workspace = runs_workspace(settings, command)
    entries = []
    for summary in workspace.list_stacks():
        name = summary.name.rsplit("/", 1)[-1]  # Pulumi Cloud lists org/project/stack
        entry = entry_from_tags(name, workspace.list_tags(name), settings.backend_url)
        if entry is not None:
            entries.append(entry)
    return sorted(entries, key=lambda e: e.key)
