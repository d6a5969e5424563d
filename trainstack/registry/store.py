"""The run registry: one SQLite file shared by every runner process on this machine.

WAL lets readers (`runs list`, `logs --follow`) proceed while a runner writes; every write is one
short `BEGIN IMMEDIATE` transaction and `busy_timeout` makes concurrent writers queue instead of
failing. Rows become `RunRecord`s at this boundary and nowhere else.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType

from trainstack.errors import NotFoundError
from trainstack.registry.home import registry_path, runs_root
from trainstack.registry.liveness import RunnerIdentity, runner_alive
from trainstack.registry.migrations import migrate
from trainstack.registry.model import NewRun, ReplicaExit, RunKind, RunRecord, RunStatus

BUSY_TIMEOUT_MS = 30_000
_ACTIVE = (RunStatus.PENDING.value, RunStatus.RUNNING.value)


@dataclass(frozen=True)
class RunFilter:
    name: str | None = None
    experiment: str | None = None
    status: RunStatus | None = None
    kind: RunKind | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    since: float | None = None  # epoch seconds; runs created at or after
    limit: int | None = None


class Registry:
    """Open with `Registry.open(home)`; use as a context manager to close it."""

    def __init__(self, home: Path, conn: sqlite3.Connection) -> None:
        self.home = home
        self._conn = conn

    @classmethod
    def open(cls, home: Path) -> Registry:
        home.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, so each write is one transaction.
        conn = sqlite3.connect(
            registry_path(home), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL is durable across application crashes in WAL mode; only power loss can lose
        # the last commits, which for a run index is an acceptable trade for speed.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
        return cls(home, conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # --- writes ------------------------------------------------------------------------------

    def create(self, new: NewRun, runner: RunnerIdentity | None = None) -> RunRecord:
        """Record a pending run and give it an id (and, for local runs, a run directory)."""
        for _ in range(20):
            run_id = f"{new.name}-{secrets.token_hex(3)}"
            run_dir = runs_root(self.home) / run_id if new.kind is RunKind.LOCAL else None
            try:
                with self._write() as conn:
                    conn.execute(
                        "INSERT INTO runs (id, name, component, component_version, kind, job_type,"
                        " experiment, tags, status, created_at, run_dir, runner_pid,"
                        " runner_started_at, stack_name, spec_path, outputs, parameters)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            run_id, new.name, new.component, new.component_version,
                            new.kind.value, new.job_type, new.experiment,
                            json.dumps(dict(new.tags), sort_keys=True), RunStatus.PENDING.value,
                            time.time(), str(run_dir) if run_dir else None,
                            runner.pid if runner else None,
                            runner.started_at if runner else None,
                            new.stack_name, new.spec_path,
                            json.dumps(dict(new.outputs), sort_keys=True),
                            json.dumps(dict(new.parameters)),
                        ),
                    )
            except sqlite3.IntegrityError:
                continue  # id collision: draw again
            return self.get(run_id)
        raise RuntimeError("could not allocate a unique run id")

    def mark_running(self, run_id: str, exits: Iterable[ReplicaExit]) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), exits = ?"
                " WHERE id = ? AND status IN (?, ?)",
                (RunStatus.RUNNING.value, time.time(), _exits_json(exits), run_id, *_ACTIVE),
            )

    def record_progress(
        self, run_id: str, *, exits: Iterable[ReplicaExit], restarts: int
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET exits = ?, restarts = ? WHERE id = ?",
                (_exits_json(exits), restarts, run_id),
            )

    def finish(
        self,
        run_id: str,
        status: RunStatus,
        *,
        exits: Iterable[ReplicaExit] | None = None,
        restarts: int | None = None,
        reason: str | None = None,
    ) -> RunRecord:
        """Record the end of a run; a run that already ended keeps its first recorded end."""
        if not status.finished:
            raise ValueError(f"{status} is not a final status")
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, reason = ?,"
                " exits = COALESCE(?, exits), restarts = COALESCE(?, restarts)"
                " WHERE id = ? AND status IN (?, ?)",
                (
                    status.value, time.time(), reason,
                    _exits_json(exits) if exits is not None else None, restarts,
                    run_id, *_ACTIVE,
                ),
            )
        return self.get(run_id)

    def reap_interrupted(self) -> list[RunRecord]:
        """Mark local runs whose runner process is gone as interrupted; returns them."""
        rows = self._conn.execute(
            "SELECT id, runner_pid, runner_started_at FROM runs"
            " WHERE kind = 'local' AND status IN (?, ?)",
            _ACTIVE,
        ).fetchall()
        dead = [
            run_id for run_id, pid, started in rows
            if pid is None or not runner_alive(RunnerIdentity(int(pid), float(started or 0)))
        ]
        reaped = []
        for run_id in dead:
            reaped.append(
                self.finish(
                    run_id, RunStatus.INTERRUPTED,
                    reason="the runner stopped without recording how the run ended",
                )
            )
        return reaped

    # --- reads -------------------------------------------------------------------------------

    def get(self, run_id: str) -> RunRecord:
        row = self._conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return _record(row)

    def resolve(self, ref: str) -> RunRecord:
        """A run named by the user: its id, its name (the latest such run) or an id prefix."""
        conn = self._conn
        row = conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (ref,)).fetchone()
        if row is None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE name = ? ORDER BY created_at DESC LIMIT 1",
                (ref,),
            ).fetchone()
        if row is None:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE substr(id, 1, ?) = ? LIMIT 2",
                (len(ref), ref),
            ).fetchall()
            if len(rows) > 1:
                raise NotFoundError(
                    f"{ref!r} matches more than one run", hint="give more of the run id"
                )
            row = rows[0] if rows else None
        if row is None:
            from trainstack.spec.suggest import did_you_mean

            names = [r[0] for r in conn.execute("SELECT DISTINCT name FROM runs")]
            raise NotFoundError(
                f"no run {ref!r} in {registry_path(self.home)}.{did_you_mean(ref, names)}",
                hint="`trainstack runs list` shows the runs recorded here",
            )
        return _record(row)

    def list(self, flt: RunFilter | None = None) -> list[RunRecord]:
        flt = flt or RunFilter()
        where: list[str] = []
        args: list[object] = []
        for column, value in (
            ("name", flt.name), ("experiment", flt.experiment),
            ("status", flt.status.value if flt.status else None),
            ("kind", flt.kind.value if flt.kind else None),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if flt.since is not None:
            where.append("created_at >= ?")
            args.append(flt.since)
        sql = f"SELECT {_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, id"
        records = [_record(row) for row in self._conn.execute(sql, args)]
        # Tags are few and free-form (any characters in keys), so they are matched here rather
        # than through JSON paths in SQL.
        records = [
            r for r in records if all(r.tags.get(k) == v for k, v in flt.tags.items())
        ]
        return records[: flt.limit] if flt.limit is not None else records


_COLUMNS = (
    "id, name, component, component_version, kind, job_type, experiment, tags, status,"
    " created_at, started_at, finished_at, exits, restarts, run_dir, runner_pid,"
    " runner_started_at, stack_name, spec_path, reason, outputs, parameters"
)


def _exits_json(exits: Iterable[ReplicaExit]) -> str:
    # A fourth element only for stopped replicas: older rows (three elements) still read.
    return json.dumps([[e.role, e.index, e.exit_code, *([True] if e.stopped else [])]
                       for e in sorted(exits)])


def _record(row: tuple[object, ...]) -> RunRecord:
    (run_id, name, component, version, kind, job_type, experiment, tags, status, created,
     started, finished, exits, restarts, run_dir, pid, pid_started, stack, spec, reason,
     outputs, parameters) = row
    return RunRecord(
        id=str(run_id),
        name=str(name),
        component=str(component),
        component_version=str(version),
        kind=RunKind(str(kind)),
        job_type=str(job_type),
        experiment=None if experiment is None else str(experiment),
        tags=MappingProxyType({str(k): str(v) for k, v in json.loads(str(tags)).items()}),
        status=RunStatus(str(status)),
        created_at=float(str(created)),
        started_at=None if started is None else float(str(started)),
        finished_at=None if finished is None else float(str(finished)),
        exits=tuple(
            ReplicaExit(str(role), int(index), None if code is None else int(code),
                        stopped=bool(rest and rest[0]))
            for role, index, code, *rest in json.loads(str(exits))
        ),
        restarts=int(str(restarts)),
        run_dir=None if run_dir is None else Path(str(run_dir)),
        runner_pid=None if pid is None else int(str(pid)),
        runner_started_at=None if pid_started is None else float(str(pid_started)),
        stack_name=None if stack is None else str(stack),
        spec_path=None if spec is None else str(spec),
        reason=None if reason is None else str(reason),
        outputs=MappingProxyType({str(k): str(v) for k, v in json.loads(str(outputs)).items()}),
        parameters=MappingProxyType(dict(json.loads(str(parameters)))),
    )
