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


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the version it ends at."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    current = _version(conn)
    if current > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"registry schema version {current} is newer than this trainstack ({SCHEMA_VERSION})"
        )
    if current == SCHEMA_VERSION:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = _version(conn)
        for version, (name, script) in enumerate(MIGRATIONS, start=1):
            if version <= current:
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
    return SCHEMA_VERSION


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT our transaction first, so split and run one by one.
    return [s.strip() for s in script.split(";") if s.strip()]
