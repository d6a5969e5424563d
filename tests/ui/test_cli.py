"""`trainstack ui` as a user starts it: it serves a real run's page on 127.0.0.1, and bad input
(a port, a port in use, a damaged registry, a short token) is one clear error."""

from __future__ import annotations

import re
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.ui.conftest import Runs


@pytest.mark.slow
def test_trainstack_ui_serves_the_runs_page_and_a_run_page(runs: Runs) -> None:
    cli = Cli(runs.home)
    proc = cli.start("ui", "--port", "0")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.match(r"trainstack ui: serving (http://127\.0\.0\.1:\d+/)$", line.strip())
        assert found, line
        base = found.group(1)
        with urllib.request.urlopen(base, timeout=30) as got:
            html = got.read().decode()
        assert f'<a class="run" href="/runs/{runs.a}">' in html
        with urllib.request.urlopen(f"{base}runs/{runs.a}", timeout=60) as got:
            assert "epoch/loss" in got.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_bad_ports_and_tokens_are_one_error_each(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home", forbid_traceback=True)
    bad = cli("ui", "--port", "70000")
    assert bad.code == 2 and "70000 is not in the range 0<=x<=65535" in bad.err
    short = cli("ui", "--port", "0", "--token", "abc")
    assert short.code == 2 and "error: --token: use at least 16 characters" in short.err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = cli("ui", "--port", str(port))
    assert busy.code == 2
    assert busy.err.startswith(f"error: port {port} on 127.0.0.1 is in use by another program")
    nowhere = cli("ui", "--port", "0", "--host", "192.0.2.1")
    assert nowhere.code == 2 and "--host 192.0.2.1: not an address of this machine" in nowhere.err


def test_a_damaged_registry_is_refused_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "registry.db").write_bytes(b"this is not SQLite " * 100)
    got = Cli(home, forbid_traceback=True)("ui", "--port", "0")
    assert got.code == 3 and got.err.startswith(f"error: the run registry {home}/registry.db")
    assert got.err.count("error:") == 1


def test_a_console_on_an_empty_home_creates_no_registry(tmp_path: Path) -> None:
    """The console only reads: started on a home with no run, it serves an empty list and leaves
    the home as it found it (it used to create registry.db there, and its -wal and -shm)."""
    home = tmp_path / "home"
    home.mkdir()
    proc = Cli(home).start("ui", "--port", "0")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first == f"trainstack ui: no run recorded in {home} yet"
        found = re.match(
            r"trainstack ui: serving (http://127\.0\.0\.1:\d+/)$", proc.stdout.readline().strip()
        )
        assert found
        for page in ("", "experiments", "sweeps", "compare"):
            with urllib.request.urlopen(found.group(1) + page, timeout=30) as got:
                assert got.status == 200
        with urllib.request.urlopen(found.group(1), timeout=30) as got:
            assert "no runs match" in got.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert sorted(p.name for p in home.iterdir()) == []


def test_off_loopback_it_warns_that_it_serves_plain_http(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = Cli(home).start("ui", "--port", "0", "--host", "0.0.0.0")
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(4)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert any(line.startswith("trainstack ui: serving http://0.0.0.0:") for line in lines), lines
    (warning,) = [line for line in lines if line.startswith("WARNING")]
    assert "plain HTTP" in warning and "ssh -L" in warning
