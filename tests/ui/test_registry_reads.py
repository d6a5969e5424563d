"""The console's pages when the registry cannot be read now: something that is not a file in
its place, or a writer holding it locked. Each page answers with a page saying so, soon."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK
from tests.ui.serving import home_with_a_log
from trainstack.registry.home import registry_path
from trainstack.ui.app import UiConfig, create_app


def _client(home: Path) -> FlaskClient:
    c = create_app(UiConfig(home=home)).test_client()
    c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
    return c


def test_a_registry_replaced_by_a_fifo_is_a_page_not_a_hung_thread(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home_with_a_log(home, b"a line\n")
    db = registry_path(home)
    db.unlink()
    os.mkfifo(db)
    answers: list[tuple[int, str]] = []

    def ask() -> None:
        got = _client(home).get("/")
        answers.append((got.status_code, got.get_data(as_text=True)))

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(timeout=30)
    if asking.is_alive():  # blocked opening the FIFO: a writer's open releases it
        os.close(os.open(db, os.O_WRONLY | os.O_NONBLOCK))
    assert answers, "the page never answered"
    status, page = answers[0]
    assert status == 503 and "is not a file" in page


def test_a_locked_registry_is_a_page_in_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.ui import queries

    assert queries.BUSY_S <= 5  # what a page waits for a writer: seconds, not SQLite's 30
    monkeypatch.setattr(queries, "BUSY_S", 0.2)  # and this test waits a fifth of one
    home = tmp_path / "home"
    home_with_a_log(home, b"a line\n")
    writer = sqlite3.connect(registry_path(home), isolation_level=None)
    try:
        writer.execute("PRAGMA locking_mode = EXCLUSIVE")
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("UPDATE runs SET name = name")
        began = time.monotonic()
        got = _client(home).get("/")
        waited = time.monotonic() - began
    finally:
        writer.close()
    assert got.status_code == 503 and "is busy" in got.get_data(as_text=True)
    assert waited < 20, "a page waits no longer than a moment, not SQLite's 30 s"
