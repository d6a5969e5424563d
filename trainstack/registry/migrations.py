"""The registry's schema, as an append-only list of migrations.

Never edit a released migration: add the next one. Each is applied once, in order, inside one
write transaction together with its row in `schema_migrations`, so two processes opening a fresh
database at the same time cannot both apply it.
"""

from __future__ import annotations

import sqlite3
import time

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "create runs",
        """
        CREATE TABLE runs (
            id                TEXT PRIMARY KEY,
            name              TEXT NOT NULL,
            component         TEXT NOT NULL,
            component_version TEXT NOT NULL,
            kind              TEXT NOT NULL CHECK (kind IN ('local', 'cluster')),
            job_type          TEXT NOT NULL DEFAULT '',
            experiment        TEXT,
            tags              TEXT NOT NULL DEFAULT '{}',
            status            TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded',
                                                  'failed', 'cancelled', 'interrupted')),
            created_at        REAL NOT NULL,
            started_at        REAL,
            finished_at       REAL,
            exits             TEXT NOT NULL DEFAULT '[]',
            restarts          INTEGER NOT NULL DEFAULT 0,
            run_dir           TEXT,
            runner_pid        INTEGER,
            runner_started_at REAL,
            stack_name        TEXT,
            spec_path         TEXT,
            reason            TEXT
        );
        CREATE INDEX runs_name ON runs (name, created_at);
        CREATE INDEX runs_status ON runs (status);
        CREATE INDEX runs_experiment ON runs (experiment, created_at);
        CREATE INDEX runs_created ON runs (created_at);
        """,
    ),
    (
        "outputs: where each output of a run lands (name -> URI)",
        """
        ALTER TABLE runs ADD COLUMN outputs TEXT NOT NULL DEFAULT '{}';
        """,
    ),
    (
        "parameters: the run's effective hyperparameters (name -> value), for sweeps and compare",
        """
        ALTER TABLE runs ADD COLUMN parameters TEXT NOT NULL DEFAULT '{}';
        """,
    ),
    (
        "restarts: a run's recovery history, one row per restart of a replica",
        """
        CREATE TABLE restarts (
            run_id      TEXT NOT NULL,
            at          REAL NOT NULL,
            role        TEXT NOT NULL,
            idx         INTEGER NOT NULL,
            exit_code   INTEGER,
            reason      TEXT NOT NULL,
            detail      TEXT NOT NULL DEFAULT '',
            ran_seconds REAL,
            counted     INTEGER NOT NULL DEFAULT 1,
            UNIQUE (run_id, role, idx, at)
        );
        CREATE INDEX restarts_run ON restarts (run_id, at);
        """,
    ),
    (
        "created_by: who recorded the run (the console's 'only mine'); NULL for older runs",
        """
        ALTER TABLE runs ADD COLUMN created_by TEXT;
        """,
    ),
    (
        "log_place: where a deployed run's replica logs were shipped, and its store's region",
        """
        ALTER TABLE runs ADD COLUMN log_place TEXT;
        ALTER TABLE runs ADD COLUMN log_region TEXT;
        """,
    ),
    (
        "resumed_from: the run whose checkpoints a run started from (--resume)",
        """
        ALTER TABLE runs ADD COLUMN resumed_from TEXT;
        """,
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNewError(RuntimeError):
    """The database was written by a newer trainstack."""


def refuse_newer(conn: sqlite3.Connection) -> None:
    """Refuse a database from a newer trainstack before anything writes to it."""
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if has_table and (current := _version(conn)) > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"registry schema version {current} is newer than this trainstack ({SCHEMA_VERSION})"
        )


class ForeignSchemaError(RuntimeError):
    """The database holds tables that trainstack's migrations did not make."""


def check_ours(conn: sqlite3.Connection) -> None:
    """Refuse, reading only, a database that is not a trainstack registry: another program's
    tables, or trainstack's tables without the columns its recorded migrations added. An empty
    database (no table at all) is a new registry. Checked before anything is written: a foreign
    database would otherwise get a migrations table and WAL, or silently become the registry."""
    found = _tables(conn)
    if not found:
        return
    version = _version(conn) if "schema_migrations" in found else 0
    if found == {"schema_migrations"} and version == 0:
        # Another trainstack is creating the registry this moment (one that committed the
        # migrations table before its first migration, as trainstack did until it made both in
        # one transaction): a new registry, not a foreign one.
        return
    expected = _schema_at(version)
    if version == 0 or found != set(expected):
        raise ForeignSchemaError(f"it holds table(s) {', '.join(sorted(found))}")
    for table, columns in expected.items():
        missing = columns - _columns(conn, table)
        if missing:
            raise ForeignSchemaError(
                f"its {table} table lacks column(s) {', '.join(sorted(missing))} that schema "
                f"version {version} has"
            )


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return {str(r[0]) for r in rows}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def _schema_at(version: int) -> dict[str, set[str]]:
    """{table: columns} after the first `version` migrations, replayed in memory: the
    migrations stay the one source of the schema."""
    mem = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(mem, upto=version)
        return {t: _columns(mem, t) for t in _tables(mem)}
    finally:
        mem.close()


def migrate(conn: sqlite3.Connection, upto: int = SCHEMA_VERSION) -> int:
    """Bring the schema up to date; returns the version it ends at. The migrations table is
    created in the same transaction as the first migration, so no other process ever sees a
    registry with the one and not the other (check_ours would take that for a foreign file)."""
    current = _version(conn) if "schema_migrations" in _tables(conn) else 0
    if current > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"registry schema version {current} is newer than this trainstack ({SCHEMA_VERSION})"
        )
    if current >= upto:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = _version(conn)
        for version, (name, script) in enumerate(MIGRATIONS, start=1):
            if version <= current or version > upto:
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, time.time()),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return upto


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT our transaction first, so split and run one by one.
    return [s.strip() for s in script.split(";") if s.strip()]
