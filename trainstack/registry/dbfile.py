"""The registry's file: opened and checked before anything is written to it (a damaged file,
another program's database or a newer trainstack's is refused, read-only, before the WAL switch or
a migration touches it), and the errors that name it. Kept apart from trainstack.registry.store,
which reads and writes the runs in it."""

from __future__ import annotations

import os
import shlex
import sqlite3
import time
from pathlib import Path

from trainstack.errors import UserError
from trainstack.registry.home import registry_path
from trainstack.registry.migrations import ForeignSchemaError, check_ours, migrate, refuse_newer

BUSY_TIMEOUT_MS = 30_000


class RegistryError(UserError):
    """The registry file cannot be used as it is (damaged, unreadable, from a newer trainstack).

    trainstack never repairs or replaces it: the file is the user's record of every run."""

    exit_code = 3


class RegistryFullError(RegistryError):
    """The disk holding the registry is full: nothing is wrong with the file itself."""


def damaged(path: Path, what: str) -> RegistryError:
    here, aside = shlex.quote(str(path)), shlex.quote(f"{path}.bad")
    return RegistryError(
        f"the run registry {path} {what}",
        hint=f"trainstack leaves it as it is; move it aside (mv {here} {aside}) to start a new "
        "registry, or restore it from a backup",
    )


def refuse_not_a_file(path: Path) -> None:
    """A FIFO, a directory or a device at the registry's path is one RegistryError: SQLite
    opens its file without O_NONBLOCK, so a FIFO there would block the opener for good."""
    if path.exists() and not path.is_file():
        raise damaged(path, "is not a file")


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the registry at `path`, checked before anything is written to it."""
    refuse_not_a_file(path)
    if path.exists() and path.stat().st_size > 0:
        _check_read_only_when_free(path)
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so each write is one transaction.
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL is durable across application crashes in WAL mode; only power loss can lose
        # the last commits, which for a run index is an acceptable trade for speed.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def check_existing(home: Path) -> bool:
    """Check the registry under `home` without writing anything (a reader's start: the
    console); False when there is none yet, which is left uncreated."""
    path = registry_path(home)
    refuse_not_a_file(path)
    if not path.exists():
        return False
    try:
        _check_read_only_when_free(path)
    except sqlite3.Error as err:
        raise damaged(path, f"cannot be read ({err})") from None
    return True


def _check_read_only_when_free(path: Path) -> None:
    """`_check_read_only`, waited for: a read-only connection to a WAL database may be told
    "locked" at once, without SQLite's busy handler, while another process opens the file for
    the first time or ends the last connection (its WAL index being rebuilt or removed). Such a
    moment is short; a lock held longer than the busy timeout is still the user's error."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.01
    while True:
        try:
            _check_read_only(path)
            return
        except sqlite3.OperationalError as err:
            text = str(err)
            if not ("locked" in text or "busy" in text) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _check_read_only(path: Path) -> None:
    """Check an existing file through a read-only connection (SQLite's `mode=ro` URI), so a
    damaged file or another program's database is refused before anything (the WAL switch, a
    migration) writes to it: cheap at a registry's size."""
    conn = sqlite3.connect(
        f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000
    )
    try:
        verdict = conn.execute("PRAGMA quick_check(1)").fetchone()
        if verdict is None or verdict[0] != "ok":
            raise damaged(path, f"is damaged ({verdict[0] if verdict else 'no answer'})")
        refuse_newer(conn)
        try:
            check_ours(conn)
        except ForeignSchemaError as err:
            raise damaged(path, f"is not a trainstack run registry ({err})") from None
    finally:
        conn.close()


def identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)
