"""The console's reads of the run registry: a page of runs under filters and a sort, one run,
its recovery history, experiments. Each request opens its own read-only SQLite connection
(`mode=ro`): nothing the console does can write to the registry, and a registry replaced or
deleted while it serves is read as it is now; something that is not a file there is refused
before SQLite opens it. A page waits for a writer's lock only `BUSY_S`, not the 30 s a runner
waits to record its run: a page that cannot be read now says so, and a reload reads it."""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trainstack.errors import NotFoundError
from trainstack.registry import RegistryError, Restart, RunKind, RunRecord, RunStatus
from trainstack.registry.dbfile import refuse_not_a_file
from trainstack.registry.home import registry_path
from trainstack.registry.migrations import migrate
from trainstack.registry.rows import COLUMNS, RESTART_COLUMNS, parse_record, parse_restart

PER_PAGE = 50
BUSY_S = 2.0


class Sort(enum.StrEnum):
    CREATED = "created"
    NAME = "name"
    STATUS = "status"
    COMPONENT = "component"
    DURATION = "duration"
    RESTARTS = "restarts"
    # The chosen metric's best value, best first: not a column, ranked from each run's metric
    # summary (trainstack.ui.runlist).
    METRIC = "metric"


_ORDER = {
    Sort.CREATED: "created_at",
    Sort.NAME: "name",
    Sort.STATUS: "status",
    Sort.COMPONENT: "component",
    Sort.DURATION: "(finished_at - started_at)",
    Sort.RESTARTS: "restarts",
}


@dataclass(frozen=True)
class RunQuery:
    """What the runs page asks for; empty strings and None filter nothing."""

    text: str = ""  # part of the name or of the id
    job_type: str = ""
    status: RunStatus | None = None
    kind: RunKind | None = None
    since: float | None = None  # created at or after (epoch seconds)
    component: str = ""
    experiment: str = ""
    env: str = ""  # the run's `env` tag or its stack's environment
    team: str = ""  # the run's `team` tag
    tag: tuple[str, str] | None = None
    created_by: str = ""  # "only mine"
    sort: Sort = Sort.CREATED
    descending: bool = True
    page: int = 1
    per_page: int = PER_PAGE


@dataclass(frozen=True)
class RunPage:
    runs: tuple[RunRecord, ...]
    total: int  # runs matching the filters, on every page
    query: RunQuery
    # rows of this page that could not be read, each said (the others are still listed)
    damaged: tuple[str, ...] = ()

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.query.per_page))


@dataclass(frozen=True)
class Experiment:
    name: str
    runs: int
    running: int
    failed: int
    last_created: float


_HAS_TAG = "EXISTS (SELECT 1 FROM json_each(runs.tags) AS t WHERE t.key = ? AND t.value = ?)"


def runners_gone(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The local runs still recorded pending or running whose runner process is gone: they read
    `interrupted` everywhere (trainstack.ui.views.status_of), so the filters and counts treat
    them so too. Only a few runs are ever running, so each is looked at."""
    from trainstack.registry.liveness import RunnerIdentity, runner_alive

    rows = conn.execute(
        "SELECT id, runner_pid, runner_started_at FROM runs"
        " WHERE kind = 'local' AND status IN ('pending', 'running')"
    ).fetchall()
    gone = []
    for run_id, pid, started in rows:
        try:
            alive = pid is not None and runner_alive(
                RunnerIdentity(int(pid), float(started or 0.0))
            )
        except (TypeError, ValueError):  # a damaged pid: the row's own page says so
            alive = True
        if not alive:
            gone.append(str(run_id))
    return tuple(gone)


def _status(status: RunStatus, gone: tuple[str, ...]) -> tuple[str, list[object]]:
    """The filter for a status as the runs read now: a run whose runner is gone is interrupted,
    not pending or running."""
    marks = ", ".join("?" * len(gone))
    if status is RunStatus.INTERRUPTED and gone:
        return f"(status = ? OR id IN ({marks}))", [status.value, *gone]
    if status in (RunStatus.PENDING, RunStatus.RUNNING) and gone:
        return f"(status = ? AND id NOT IN ({marks}))", [status.value, *gone]
    return "status = ?", [status.value]


def _where(q: RunQuery, gone: tuple[str, ...] = ()) -> tuple[str, list[object]]:
    where: list[str] = []
    args: list[object] = []
    if q.status is not None:
        clause, values = _status(q.status, gone)
        where.append(clause)
        args += values
    if q.text:
        where.append("(instr(lower(name), lower(?)) > 0 OR instr(id, ?) > 0)")
        args += [q.text, q.text]
    for column, value in (
        ("job_type", q.job_type),
        ("component", q.component),
        ("experiment", q.experiment),
        ("created_by", q.created_by),
        ("kind", q.kind.value if q.kind else ""),
    ):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    if q.since is not None:
        where.append("created_at >= ?")
        args.append(q.since)
    if q.env:
        where.append(f"({_HAS_TAG} OR substr(stack_name, 1, ?) = ?)")
        args += ["env", q.env, len(q.env) + 1, q.env + "."]
    if q.team:
        where.append(_HAS_TAG)
        args += ["team", q.team]
    if q.tag is not None:
        where.append(_HAS_TAG)
        args += list(q.tag)
    return (" WHERE " + " AND ".join(where)) if where else "", args


@contextmanager
def reading(home: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the registry under `home`; SQLite's failures as one
    `RegistryError` naming the file."""
    path = registry_path(home)
    refuse_not_a_file(path)
    try:
        if path.exists():
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_S)
        else:
            # No run recorded here yet: an empty registry of the same schema, in memory, so the
            # console (which only reads) creates no file in the home.
            conn = sqlite3.connect(":memory:")
            migrate(conn)
    except sqlite3.Error as err:
        raise _unreadable(path, err) from None
    try:
        yield conn
    except sqlite3.Error as err:
        raise _unreadable(path, err) from None
    finally:
        conn.close()


def _unreadable(path: Path, err: sqlite3.Error) -> RegistryError:
    if getattr(err, "sqlite_errorname", "").startswith("SQLITE_BUSY"):
        return RegistryError(
            f"the run registry {path} is busy: another process has held it locked for more "
            f"than {BUSY_S:g} s",
            hint="a run being recorded holds it briefly; reload this page in a moment",
        )
    return RegistryError(
        f"the run registry {path} cannot be read ({err})",
        hint="`trainstack runs list` says more; the console shows it again once it reads",
    )


def _record(row: tuple[object, ...]) -> RunRecord:
    try:
        return parse_record(row)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise RegistryError(
            f"run {row[0]!s} in the run registry has a damaged field ({type(err).__name__})"
        ) from None


def _order(q: RunQuery) -> str:
    if q.sort not in _ORDER:  # ranked outside SQL
        return "created_at DESC, id"
    direction = "DESC" if q.descending else "ASC"
    nulls = f"{_ORDER[q.sort]} IS NULL, " if q.sort is Sort.DURATION else ""
    return f"{nulls}{_ORDER[q.sort]} {direction}, created_at DESC, id"


def page(conn: sqlite3.Connection, q: RunQuery) -> RunPage:
    where, args = _where(q, runners_gone(conn) if q.status is not None else ())
    total = int(conn.execute(f"SELECT COUNT(*) FROM runs{where}", args).fetchone()[0])
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM runs{where} ORDER BY {_order(q)} LIMIT ? OFFSET ?",
        [*args, q.per_page, (max(1, q.page) - 1) * q.per_page],
    ).fetchall()
    runs: list[RunRecord] = []
    damaged: list[str] = []
    for row in rows:
        try:
            runs.append(_record(row))
        except RegistryError as err:
            damaged.append(err.message)
    return RunPage(tuple(runs), total, q, tuple(damaged))


def matching(conn: sqlite3.Connection, q: RunQuery) -> RunPage:
    """Every run under the filters in the query's order (newest first when it sorts by a
    metric), unpaged: what a ranking or filter outside SQL (by a metric) orders and pages."""
    where, args = _where(q, runners_gone(conn) if q.status is not None else ())
    rows = conn.execute(f"SELECT {COLUMNS} FROM runs{where} ORDER BY {_order(q)}", args).fetchall()
    runs: list[RunRecord] = []
    damaged: list[str] = []
    for row in rows:
        try:
            runs.append(_record(row))
        except RegistryError as err:
            damaged.append(err.message)
    return RunPage(tuple(runs), len(runs), q, tuple(damaged))


def get(conn: sqlite3.Connection, run_id: str) -> RunRecord:
    row = conn.execute(f"SELECT {COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"no run with id {run_id!r} in this registry")
    return _record(row)


def restarts(conn: sqlite3.Connection, run_id: str) -> list[Restart]:
    rows = conn.execute(
        f"SELECT {RESTART_COLUMNS} FROM restarts WHERE run_id = ? ORDER BY at, role, idx",
        (run_id,),
    ).fetchall()
    return [parse_restart(row) for row in rows]


def choices(conn: sqlite3.Connection, column: str) -> tuple[str, ...]:
    """The distinct values of a column the filters offer (job types, components)."""
    assert column in {"job_type", "component", "experiment"}
    rows = conn.execute(
        f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL AND {column} != ''"
        f" ORDER BY {column}"
    )
    return tuple(str(r[0]) for r in rows)


def experiments(conn: sqlite3.Connection) -> list[Experiment]:
    gone = runners_gone(conn)
    marks = ", ".join("?" * len(gone))
    not_gone = f" AND id NOT IN ({marks})" if gone else ""
    rows = conn.execute(
        f"SELECT experiment, COUNT(*), SUM(status IN ('pending', 'running'){not_gone}),"
        " SUM(status = 'failed'), MAX(created_at) FROM runs WHERE experiment IS NOT NULL"
        " GROUP BY experiment ORDER BY MAX(created_at) DESC",
        list(gone),
    )
    return [
        Experiment(str(name), int(n), int(running or 0), int(failed or 0), float(last))
        for name, n, running, failed, last in rows
    ]
