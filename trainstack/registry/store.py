"""The run registry: one SQLite file shared by every runner process on this machine.

WAL lets readers (`runs list`, `logs --follow`) proceed while a runner writes; every write is one
short `BEGIN IMMEDIATE` transaction and `busy_timeout` makes concurrent writers queue instead of
failing. Rows become `RunRecord`s at this boundary and nowhere else.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TypeVar

from trainstack.errors import NotFoundError
from trainstack.registry.dbfile import RegistryError, RegistryFullError, connect, damaged, identity
from trainstack.registry.home import registry_path, runs_root
from trainstack.registry.liveness import RunnerIdentity, runner_alive
from trainstack.registry.migrations import (
    SchemaTooNewError,
)
from trainstack.registry.model import (
    NewRun,
    ReplicaExit,
    Restart,
    RunKind,
    RunRecord,
    RunStatus,
)
from trainstack.registry.owner import current_user
from trainstack.registry.rows import COLUMNS as _COLUMNS
from trainstack.registry.rows import (
    RESTART_COLUMNS,
    check_storable,
    exits_json,
    parse_record,
    parse_restart,
)

_ACTIVE = (RunStatus.PENDING.value, RunStatus.RUNNING.value)
# An ambiguous id prefix names this many of the runs it matches.
_CANDIDATES = 10


def _why_not_a_folder(home: Path, err: OSError) -> str:
    """mkdir's reason, except its 'File exists' for a symbolic link that leads nowhere."""
    if isinstance(err, FileExistsError) and home.is_symlink():
        try:
            os.stat(home)
        except OSError as broken:
            return f"it is a symbolic link to {os.readlink(home)} ({broken.strerror})"
    return str(err.strerror or err)


@contextmanager
def _sqlite_errors(path: Path) -> Iterator[None]:
    """SQLite's failures on the registry file, as one clear error naming the file."""
    try:
        yield
    except SchemaTooNewError as err:
        raise RegistryError(
            f"the run registry {path} was written by a newer trainstack ({err})",
            hint="upgrade trainstack (pip install -U trainstack), or point --home elsewhere",
        ) from None
    except sqlite3.IntegrityError:
        raise  # a constraint the caller handles (an id drawn twice)
    except sqlite3.DatabaseError as err:
        text = str(err)
        if "readonly" in text or "read-only" in text:
            raise RegistryError(
                f"the run registry {path} cannot be written ({text})",
                hint=f"trainstack writes the registry for every verb that reads it; make {path} "
                "and its folder writable, or point --home elsewhere",
            ) from None
        if "unable to open" in text:
            raise RegistryError(
                f"the run registry {path} cannot be opened ({text})",
                hint=f"check that {path.parent} is a writable folder, or point --home elsewhere",
            ) from None
        if "disk is full" in text:
            raise RegistryFullError(
                f"the run registry {path} cannot be written: the disk holding it is full",
                hint=f"free space on the disk holding {path.parent}",
            ) from None
        if "locked" in text or "busy" in text:
            raise RegistryError(
                f"the run registry {path} stayed locked by another process ({text})",
                hint="try again once other trainstack commands have finished",
            ) from None
        raise damaged(path, f"is damaged ({text})") from None


@dataclass(frozen=True)
class RunFilter:
    name: str | None = None
    experiment: str | None = None
    status: RunStatus | None = None
    kind: RunKind | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    since: float | None = None  # epoch seconds; runs created at or after
    limit: int | None = None


_T = TypeVar("_T")


def _guarded(method: Callable[..., _T]) -> Callable[..., _T]:
    """A read's SQLite failures as `RegistryError` (writes go through `_write`)."""

    @functools.wraps(method)
    def wrapper(self: Registry, *args: object, **kwargs: object) -> _T:
        with _sqlite_errors(self.path):
            return method(self, *args, **kwargs)

    return wrapper


class Registry:
    """Open with `Registry.open(home)`; use as a context manager to close it."""

    def __init__(self, home: Path, conn: sqlite3.Connection) -> None:
        self.home = home
        self._conn = conn
        self._identity = identity(registry_path(home))
        self._created: list[str] = []  # runs this process recorded (recorded again if needed)
        self.recreated = False  # whether the registry file vanished and was made again
        # Why what replaced the registry file cannot be used (then writes go on into the file
        # this process opened); None while the file at the path is the one it opened.
        self.damage: str | None = None

    @classmethod
    def open(cls, home: Path) -> Registry:
        path = registry_path(home)
        with _sqlite_errors(path):
            try:
                home.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise RegistryError(
                    f"cannot create the state folder {home}: {_why_not_a_folder(home, err)}"
                ) from None
            return cls(home, connect(path))

    def _check_file(self) -> None:
        """A registry deleted (or replaced) while this connection is open would swallow every
        write into a file nobody can see: reconnect to what is at the path now, and record again
        the runs this process created, so that their ends are not lost."""
        path = registry_path(self.home)
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == self._identity:
            return
        if now is not None and self.damage is not None:
            return  # already found unusable: keep writing where this process has been
        mine = [self.get(run_id) for run_id in self._created]
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            fresh = connect(path)
        except (RegistryError, OSError) as err:
            # Something that is not a registry took its place (a directory, another file):
            # trainstack never writes into it. This connection still reaches the file this
            # process opened (moved aside, or deleted but open), so the run's end is recorded
            # there rather than lost, and the damage is reported.
            self.damage = err.message if isinstance(err, RegistryError) else str(err)
            return
        self._conn.close()
        self._conn = fresh
        self._identity = identity(path)
        for rec in mine:
            self._insert(rec)
        self.recreated = True

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return registry_path(self.home)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with _sqlite_errors(self.path):
            self._check_file()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            if self.damage is not None:
                # The WAL beside the path pairs with nothing now: move what was written into
                # the file this connection holds, and leave that WAL empty, so that neither is
                # lost nor replayed into whatever is made at the path later.
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _insert(self, rec: RunRecord) -> None:
        """Record again a run this process created, as it last stood (see `_check_file`)."""
        self._conn.execute(
            "INSERT OR IGNORE INTO runs (id, name, component, component_version, kind, job_type,"
            " experiment, tags, status, created_at, started_at, finished_at, exits, restarts,"
            " run_dir, runner_pid, runner_started_at, stack_name, spec_path, reason, outputs,"
            " parameters, created_by)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.id,
                rec.name,
                rec.component,
                rec.component_version,
                rec.kind.value,
                rec.job_type,
                rec.experiment,
                json.dumps(dict(rec.tags), sort_keys=True),
                rec.status.value,
                rec.created_at,
                rec.started_at,
                rec.finished_at,
                exits_json(rec.exits),
                rec.restarts,
                str(rec.run_dir) if rec.run_dir else None,
                rec.runner_pid,
                rec.runner_started_at,
                rec.stack_name,
                rec.spec_path,
                rec.reason,
                json.dumps(dict(rec.outputs), sort_keys=True),
                json.dumps(dict(rec.parameters)),
                rec.created_by,
            ),
        )

    # --- writes ------------------------------------------------------------------------------

    def create(self, new: NewRun, runner: RunnerIdentity | None = None) -> RunRecord:
        """Record a pending run and give it an id (and, for local runs, a run directory)."""
        check_storable(new, runs_root(self.home))
        for _ in range(20):
            run_id = f"{new.name}-{secrets.token_hex(3)}"
            run_dir = runs_root(self.home) / run_id if new.kind is RunKind.LOCAL else None
            try:
                with self._write() as conn:
                    conn.execute(
                        "INSERT INTO runs (id, name, component, component_version, kind, job_type,"
                        " experiment, tags, status, created_at, run_dir, runner_pid,"
                        " runner_started_at, stack_name, spec_path, outputs, parameters,"
                        " created_by, resumed_from)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            run_id,
                            new.name,
                            new.component,
                            new.component_version,
                            new.kind.value,
                            new.job_type,
                            new.experiment,
                            json.dumps(dict(new.tags), sort_keys=True),
                            RunStatus.PENDING.value,
                            time.time(),
                            str(run_dir) if run_dir else None,
                            runner.pid if runner else None,
                            runner.started_at if runner else None,
                            new.stack_name,
                            new.spec_path,
                            json.dumps(dict(new.outputs), sort_keys=True),
                            json.dumps(dict(new.parameters)),
                            current_user(),
                            new.resumed_from,
                        ),
                    )
            except sqlite3.IntegrityError:
                continue  # id collision: draw again
            self._created.append(run_id)
            return self.get(run_id)
        raise RuntimeError("could not allocate a unique run id")

    def mark_running(self, run_id: str, exits: Iterable[ReplicaExit]) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), exits = ?"
                " WHERE id = ? AND status IN (?, ?)",
                (RunStatus.RUNNING.value, time.time(), exits_json(exits), run_id, *_ACTIVE),
            )

    def record_log_place(self, run_id: str, place: str, region: str | None) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET log_place = ?, log_region = ? WHERE id = ?",
                (place, region, run_id),
            )

    def record_progress(
        self,
        run_id: str,
        *,
        exits: Iterable[ReplicaExit],
        restarts: int,
        reason: str | None = None,
    ) -> None:
        """A running run's replicas and restarts; ``reason``: why it waits (a deployed run's
        pods Pending: trainstack.deploy.waiting), None when nothing does."""
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET exits = ?, restarts = ?, reason = ? WHERE id = ?",
                (exits_json(exits), restarts, reason, run_id),
            )

    def record_restart(self, run_id: str, restart: Restart) -> None:
        """Add one restart to the run's recovery history; the same replica's restart at the same
        moment (a deployed run's pod status read again) is kept once."""
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO restarts (run_id, at, role, idx, exit_code, reason, detail,"
                " ran_seconds, counted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    restart.at,
                    restart.role,
                    restart.index,
                    restart.exit_code,
                    restart.reason,
                    restart.detail,
                    restart.ran_seconds,
                    int(restart.counted),
                ),
            )

    @_guarded
    def restarts(self, run_id: str) -> list[Restart]:
        """The run's recovery history, oldest first."""
        rows = self._conn.execute(
            f"SELECT {RESTART_COLUMNS} FROM restarts WHERE run_id = ? ORDER BY at, role, idx",
            (run_id,),
        ).fetchall()
        return [parse_restart(row) for row in rows]

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
        self._end(run_id, status, exits=exits, restarts=restarts, reason=reason)
        return self.get(run_id)

    def _end(
        self,
        run_id: str,
        status: RunStatus,
        *,
        exits: Iterable[ReplicaExit] | None = None,
        restarts: int | None = None,
        reason: str | None = None,
    ) -> None:
        if not status.finished:
            raise ValueError(f"{status} is not a final status")
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, reason = ?,"
                " exits = COALESCE(?, exits), restarts = COALESCE(?, restarts)"
                " WHERE id = ? AND status IN (?, ?)",
                (
                    status.value,
                    time.time(),
                    reason,
                    exits_json(exits) if exits is not None else None,
                    restarts,
                    run_id,
                    *_ACTIVE,
                ),
            )

    @_guarded
    def mark_interrupted(self) -> list[str]:
        """Mark local runs whose runner process is gone as interrupted; returns their ids. Only
        the record (and no row is parsed: one damaged row stops no other run's reader): what such
        a run left running is trainstack.local.leftovers' to end, not a reader's."""
        rows = self._conn.execute(
            "SELECT id, runner_pid, runner_started_at FROM runs"
            " WHERE kind = 'local' AND status IN (?, ?)",
            _ACTIVE,
        ).fetchall()
        gone = []
        for run_id, pid, started in rows:
            try:
                alive = pid is not None and runner_alive(
                    RunnerIdentity(int(pid), float(started or 0))
                )
            except (TypeError, ValueError):  # a damaged pid: left for the row's own reader
                continue
            if not alive:
                self._end(
                    str(run_id),
                    RunStatus.INTERRUPTED,
                    reason="the runner stopped without recording how the run ended",
                )
                gone.append(str(run_id))
        return gone

    @_guarded
    def orphaned_tags(self, tags: set[str]) -> list[str]:
        """Of the run tags live processes carry, those of this registry's local runs whose
        runner is gone, whatever status the run was given."""
        orphaned = []
        for tag in sorted(tags):
            row = self._conn.execute(
                "SELECT runner_pid, runner_started_at FROM runs WHERE id = ? AND kind = 'local'",
                (tag,),
            ).fetchone()
            if row is None:
                continue  # not a run of this registry: another home's, left alone
            pid, started = row
            if pid is None or not runner_alive(RunnerIdentity(int(pid), float(started or 0))):
                orphaned.append(tag)
        return orphaned

    # --- reads -------------------------------------------------------------------------------

    @_guarded
    def get(self, run_id: str) -> RunRecord:
        row = self._conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return _record(row)

    @_guarded
    def resolve(self, ref: str) -> RunRecord:
        """A run named by the user: its id, its name (the latest such run) or an id prefix."""
        if not ref.strip():
            # An empty prefix is a prefix of every id: it named whichever run was alone.
            raise NotFoundError(
                "an empty run name names no run", hint="give a run id, a prefix of one, or a name"
            )
        conn = self._conn
        row = conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (ref,)).fetchone()
        if row is None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE name = ? ORDER BY created_at DESC LIMIT 1",
                (ref,),
            ).fetchone()
        if row is None:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT ?",
                (len(ref), ref, _CANDIDATES + 1),
            ).fetchall()
            if len(rows) > 1:
                # rows[i][0] is the id, [1] the name (rows.COLUMNS): no row is parsed, so a
                # damaged one cannot hide the others.
                shown = [f"{r[0]} ({r[1]})" for r in rows[:_CANDIDATES]]
                more = ", ..." if len(rows) > _CANDIDATES else ""
                raise NotFoundError(
                    f"{ref!r} matches more than one run: {', '.join(shown)}{more}",
                    hint="give more of the run id",
                )
            row = rows[0] if rows else None
        if row is None:
            from trainstack.suggest import did_you_mean

            names = [r[0] for r in conn.execute("SELECT DISTINCT name FROM runs")]
            raise NotFoundError(
                f"no run {ref!r} in {registry_path(self.home)}.{did_you_mean(ref, names)}",
                hint="`trainstack runs list` shows the runs recorded here",
            )
        return _record(row)

    @_guarded
    def list(self, flt: RunFilter | None = None) -> list[RunRecord]:
        flt = flt or RunFilter()
        where: list[str] = []
        args: list[object] = []
        for column, value in (
            ("name", flt.name),
            ("experiment", flt.experiment),
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
        records = [r for r in records if all(r.tags.get(k) == v for k, v in flt.tags.items())]
        return records[: flt.limit] if flt.limit is not None else records


def _record(row: tuple[object, ...]) -> RunRecord:
    try:
        return parse_record(row)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise RegistryError(
            f"run {row[0]!s} in the run registry has a damaged field ({type(err).__name__}: {err})",
            hint="trainstack leaves the registry as it is; a newer trainstack may have written "
            "this row, or the file was edited by hand",
        ) from None
