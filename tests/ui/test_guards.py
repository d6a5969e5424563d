"""What keeps the console safe: GET only, a loopback Host, the token off loopback, run files
opened without following a link out of the run directory, the registry only read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK, Runs
from trainstack.registry.home import registry_path
from trainstack.ui.app import TOKEN_COOKIE, UiConfig, create_app


@pytest.mark.slow
def test_no_route_takes_anything_but_get(client: FlaskClient, runs: Runs) -> None:
    for path in ("/", f"/runs/{runs.a}", f"/runs/{runs.a}/logs/worker-0.log", "/compare"):
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            got = client.open(path, method=method)
            assert got.status_code == 405, (method, path)
            assert "is not served here" in got.get_data(as_text=True)


@pytest.mark.slow
def test_a_foreign_host_is_refused_on_loopback(client: FlaskClient) -> None:
    got = client.get("/", headers={"Host": "attacker.example:8765"})
    assert got.status_code == 403 and "answers to localhost only" in got.get_data(as_text=True)
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 200


def test_off_loopback_every_request_needs_the_token(runs: Runs) -> None:
    token = "t" * 24
    app = create_app(UiConfig(home=runs.home, token=token, loopback=False))
    with app.test_client() as c:
        assert c.get("/").status_code == 401
        assert c.get(f"/?token={'x' * 24}").status_code == 401
        first = c.get(f"/?token={token}&status=succeeded")
        assert first.status_code == 303 and first.headers["Location"] == "/?status=succeeded"
        cookie = first.headers["Set-Cookie"]
        # named for the port (the test client's is 80): another console on this machine gets
        # a cookie of its own, not this one
        assert f"{TOKEN_COOKIE}_80={token}" in cookie and "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert c.get("/?status=succeeded").status_code == 200  # the cookie carries it now
        assert c.get(f"/runs/{runs.a}/charts/0.png").status_code == 200


def test_a_log_replaced_by_a_link_out_of_the_run_is_not_followed(
    runs: Runs, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE\n")
    log = runs.home / "runs" / runs.b / "logs" / "worker-0.log"
    kept = log.read_bytes()
    log.unlink()
    log.symlink_to(secret)
    try:
        app = create_app(UiConfig(home=runs.home))
        c = app.test_client()
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        page = c.get(f"/runs/{runs.b}").get_data(as_text=True)
        assert "TOP-SECRET-VALUE" not in page and "not followed" in page
        for path in ("worker-0.log", "worker-0.log?download=1"):
            got = c.get(f"/runs/{runs.b}/logs/{path}")
            assert got.status_code == 400 and b"TOP-SECRET-VALUE" not in got.data
        assert b"TOP-SECRET-VALUE" not in c.get(f"/runs/{runs.b}/logs.zip").data
        assert c.get(f"/runs/{runs.b}/logs/worker-0/since").get_json()["lines"] == []
        search = c.get(f"/runs/{runs.b}?search=SECRET").get_data(as_text=True)
        assert "TOP-SECRET-VALUE" not in search
    finally:
        log.unlink()
        log.write_bytes(kept)


@pytest.mark.slow
def test_serving_pages_writes_nothing_to_the_registry(client: FlaskClient, runs: Runs) -> None:
    # The database and its write-ahead log; readers do touch the -shm index (its read locks).
    db = registry_path(runs.home)
    files = [db, db.with_name(db.name + "-wal")]
    before = {p: (os.stat(p).st_mtime_ns, p.read_bytes()) for p in files if p.exists()}
    for path in ("/", f"/runs/{runs.a}", "/experiments", f"/compare?run={runs.a}&run={runs.b}"):
        assert client.get(path).status_code == 200
    after = {p: (os.stat(p).st_mtime_ns, p.read_bytes()) for p in files if p.exists()}
    # A reader of a WAL database may create an empty -wal where none was (SQLite opens it for
    # its read marks); an empty one holds no write. Whether one is there depends on which
    # connection closed last, so a missing one is compared as empty.
    wal = files[1]
    if wal not in before and wal in after:
        assert after.pop(wal)[1] == b""
    assert after == before
