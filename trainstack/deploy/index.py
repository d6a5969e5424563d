"""Which stack is run X: the backend's stack tags (shared), cached in ``stacks.json`` (per user).

The source of truth is the backend: every run stack carries ``trainstack:*`` tags (run, env,
job coordinates, spec digest), so anyone on the same backend finds, watches and destroys a run
(``backend_entries``). This user's ``stacks.json`` under the state home answers "which stack is
run X?" without a CLI round trip and remembers the registry record of runs deployed from here.
Writes are whole-file replacements under an exclusive lock, so concurrent deploys of different
runs cannot lose each other's entries. An index someone else could have written (another user's,
writable by others, a link: ``trainstack.statetrust``) is refused as a damaged one is: which
stack ``destroy RUN`` destroys rests on it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack import boundedjson, statetrust
from trainstack.errors import NotFoundError, UserError
from trainstack.infra.configread import did_you_mean
from trainstack.regularfile import describe

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings
    from trainstack.spec.model import Run

INDEX_FILE = "stacks.json"
TAG = "trainstack:"
# the run file a stack was deployed from, inside its repository (deploy/moved.py)
RUN_FILE_KEY = "runFile"
# tag (after the prefix) -> the StackEntry.outputs key it fills
_JOB_TAGS = {
    "job": "jobName",
    "namespace": "namespace",
    "kind": "kind",
    "apiVersion": "apiVersion",
    # the stack the run's StackReference reads (the team's scope or the platform: deploy/scope.py)
    "source": "platformStack",
    # where the run's replica logs are kept, and the store's region (deploy/logstore.py)
    "logs": "logs",
    "region": "region",
    # when `trainstack gc` saw the job end, and its digest (deploy/gc.py)
    "ended": "ended",
    "file": RUN_FILE_KEY,
}


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
    identity: str | None = None  # infra/run/identity.py; None: deployed before it was recorded

    @property
    def namespace(self) -> str | None:
        value = self.outputs.get("namespace")
        return str(value) if value else None

    @property
    def key(self) -> str:
        """Unique per stack: two teams may deploy runs of one name."""
        return f"{self.env}/{self.namespace or '-'}/{self.run}"

    def of_team(self, team: str) -> bool:
        """Whether ``team`` names this run's team or its namespace."""
        return team in (self.team, self.namespace)


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
        """The index as stored; a damaged one is refused (never treated as empty: the next
        deploy would replace it and lose every entry)."""
        try:
            raw = statetrust.read_trusted(self.path.parent, self.path)
        except FileNotFoundError:
            return {}
        except statetrust.UntrustedError as err:
            # Which stack `destroy RUN` destroys rests on it: never believed, never replaced.
            raise self._untrusted(err) from None
        except OSError as err:
            raise self._damaged(f"cannot be read: {describe(err)}") from None
        try:
            data = boundedjson.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise self._damaged(f"not UTF-8 text (byte {err.start})") from None
        except boundedjson.BoundedJsonError as err:
            where = f"{self.path}:{err.lineno}:{err.colno}" if err.lineno is not None else None
            why = str(err) if str(err).startswith("not ") else f"not valid JSON: {err}"
            raise self._damaged(why, where) from None
        if not isinstance(data, dict):
            raise self._damaged(f"expected a JSON object of runs, found {_kind(data)}")
        for key, value in data.items():
            problem = _entry_problem(value)
            if problem:
                raise self._damaged(f"{key}: {problem}")
        return data

    def _damaged(self, why: str, where: str | None = None) -> UserError:
        here, aside = shlex.quote(str(self.path)), shlex.quote(f"{self.path}.bad")
        return UserError(
            f"{where or self.path}: the run index is damaged: {why}",
            hint=f"trainstack leaves it as it is; move it aside (mv {here} {aside}): it caches "
            "the backend's stack tags, which `trainstack status` reads again without it",
        )

    def _untrusted(self, err: OSError) -> UserError:
        here, aside = shlex.quote(str(self.path)), shlex.quote(f"{self.path}.bad")
        fix = f"chmod go-w {here}, if you wrote it, or " if "writable by" in str(err) else ""
        return UserError(
            f"{self.path}: the run index is not used: {err.strerror} (only a file of yours that "
            "no one else can write is)",
            hint=f"trainstack leaves it as it is; {fix}move it aside (mv {here} {aside}): it "
            "caches the backend's stack tags, which `trainstack status` reads again without it",
        )

    def put(self, entry: StackEntry) -> None:
        with self._locked() as data:
            _drop_stack(data, entry)  # an entry written under an older key
            data[entry.key] = asdict(entry)

    def remove(self, entry: StackEntry) -> None:
        with self._locked() as data:
            data.pop(entry.key, None)
            _drop_stack(data, entry)

    def entries(self) -> list[StackEntry]:
        # Fields a newer trainstack added are left out here and kept in the file.
        return [
            StackEntry(**{k: v for k, v in entry.items() if k in _FIELDS})
            for _, entry in sorted(self._read().items())
        ]

    def find(self, run: str, env: str | None = None, team: str | None = None) -> StackEntry:
        """The stack of ``run`` (in ``env``, of ``team``: when it was deployed to several
        environments, or by several teams)."""
        return self.pick(self.entries(), run, env, team, where=str(self.path))

    @staticmethod
    def pick(
        entries: list[StackEntry], run: str, env: str | None, team: str | None = None, *, where: str
    ) -> StackEntry:
        found = [
            e
            for e in entries
            if e.run == run and (env is None or e.env == env) and (team is None or e.of_team(team))
        ]
        if len(found) == 1:
            return found[0]
        if found:
            envs = sorted({e.env for e in found})
            if len(envs) > 1:
                raise UserError(
                    f"run {run!r} is deployed in several environments ({', '.join(envs)})",
                    hint="name one with --env",
                )
            teams = ", ".join(sorted(e.team or e.namespace or "?" for e in found))
            raise UserError(
                f"run {run!r} is deployed by several teams in {envs[0]} ({teams})",
                hint="name one with --team",
            )
        in_env = f" in environment {env!r}" if env else ""
        in_env += f" of team {team!r}" if team else ""
        raise NotFoundError(
            f"no deployed run {run!r}{in_env} in {where}",
            hint=did_you_mean(run, {e.run for e in entries})
            or "`trainstack deploy RUN.yaml --env ENV` deploys one",
        )


def _drop_stack(data: dict[str, dict[str, Any]], entry: StackEntry) -> None:
    for key in [
        k
        for k, v in data.items()
        if v.get("stack") == entry.stack and v.get("backend") == entry.backend
    ]:
        del data[key]


_FIELDS = {f.name: f for f in fields(StackEntry)}
_TEXT = {"run", "env", "stack", "project", "backend", "component", "version"}
_TEXT_OR_NULL = {"experiment", "spec_path", "registry_id", "spec_hash", "team", "identity"}
_REQUIRED = {n for n, f in _FIELDS.items() if f.default is f.default_factory is MISSING}


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _entry_problem(value: object) -> str | None:
    """What is wrong with one stored entry, or None."""
    if not isinstance(value, dict):
        return f"expected an object, found {_kind(value)}"
    for name in sorted(_FIELDS):
        if name not in value:
            if name in _REQUIRED:
                return f"{name}: missing"
            continue
        got = value[name]
        if name in _TEXT and not isinstance(got, str):
            return f"{name}: expected a string, found {_kind(got)}"
        if name in _TEXT_OR_NULL and not (got is None or isinstance(got, str)):
            return f"{name}: expected a string or null, found {_kind(got)}"
        if name == "updated_at" and (isinstance(got, bool) or not isinstance(got, (int, float))):
            return f"{name}: expected a number, found {_kind(got)}"
        if name == "outputs" and not isinstance(got, dict):
            return f"{name}: expected an object, found {_kind(got)}"
    return None


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
        "identity": job.get("identity"),
        **{tag: job.get(key) for tag, key in _JOB_TAGS.items()},
    }
    return {TAG + k: str(v) for k, v in values.items() if v}


def entry_from_tags(stack: str, tags: Mapping[str, str], backend: str) -> StackEntry | None:
    """A run stack's entry read back from its tags; None for a stack without them."""
    got = {k.removeprefix(TAG): v for k, v in tags.items() if k.startswith(TAG)}
    if not got.get("run") or not got.get("env"):
        return None
    from trainstack import platformnames as names

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
        identity=got.get("identity"),
        team=got.get("team"),
    )


def backend_entries(settings: DeploySettings, command: auto.PulumiCommand) -> list[StackEntry]:
    """Every run stack in the backend, from its tags: one ``stack ls`` and one read of the
    backend's copy of them (``deploy.backendindex``); a stack the copy lacks, one ``tag ls``."""
    from trainstack.deploy import backendindex
    from trainstack.deploy.workspace import runs_workspace

    workspace = runs_workspace(settings, command)
    # Pulumi Cloud lists org/project/stack
    listed = [summary.name.rsplit("/", 1)[-1] for summary in workspace.list_stacks()]
    entries = []
    for name, tags in backendindex.tags_of(workspace, listed).items():
        entry = entry_from_tags(name, tags, settings.backend_url)
        if entry is not None:
            entries.append(entry)
    return sorted(entries, key=lambda e: e.key)
