"""One way to run the CLI in tests: tests/clirunner.py's `Cli`, taken as the
`cli` fixture (tests/conftest.py). No test module spawns `python -m trainstack` itself, builds a
click runner, calls `main` in-process, or defines a runner class or fixture of its own."""

from __future__ import annotations

import ast
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.clirunner import Cli

REPO = Path(__file__).resolve().parents[1]

TESTS = Path(__file__).resolve().parent
RUNNER = TESTS / "clirunner.py"
OWN_WAY = re.compile(r"""CliRunner|["']-m["'],\s*["']trainstack["']""")


def _modules() -> list[Path]:
    return [
        p
        for p in sorted(TESTS.rglob("*.py"))
        if p not in (RUNNER, Path(__file__).resolve())
        and "fixtures" not in p.relative_to(TESTS).parts
    ]


def test_no_module_runs_the_cli_its_own_way() -> None:
    found = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        found += [
            f"{path.relative_to(TESTS)}:{n}"
            for n, line in enumerate(text.splitlines(), 1)
            if OWN_WAY.search(line)
        ]
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "trainstack.cli.main"
                and {a.name for a in node.names} & {"main", "cli"}
            ):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}: calls main itself")
            if isinstance(node, ast.ClassDef) and node.name.lower() in ("cli", "clirunner"):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}: class {node.name}")
            # (A `cli` fixture of another tool, such as test_cluster's fake Pulumi CLI, is fine.)
            if (
                isinstance(node, ast.FunctionDef)
                and node.name == "cli"
                and isinstance(node.returns, ast.Name)
                and node.returns.id == "Cli"
                and path != TESTS / "conftest.py"
            ):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}: def cli")
    assert not found, "use the cli fixture (tests/clirunner.py):\n" + "\n".join(found)


def test_the_fixture_is_used_across_the_suite() -> None:
    users = {
        p.relative_to(TESTS).parts[0]
        for p in _modules()
        if re.search(r"def test\w*\([^)]*\bcli: Cli\b", p.read_text(encoding="utf-8"))
    }
    assert {"local", "metrics"} <= users, users


def test_the_runner_gives_exit_code_and_both_streams(cli: Cli, tmp_path: Path) -> None:
    assert cli.home == tmp_path / "home" and cli.env["TRAINSTACK_HOME"] == str(cli.home)
    missing = tmp_path / "missing.yaml"
    done = cli("validate", missing)
    assert done.code == done.returncode == 2
    assert "missing.yaml: file not found" in done.err and "1 problem(s)" in done.out
    inside = cli.invoke("validate", missing)
    assert (inside.code, "missing.yaml" in inside.err) == (2, True)


def test_in_process_and_subprocess_give_the_same_result(tmp_path: Path) -> None:
    """The default (in this process) and `subprocess=True` agree on code, stdout and stderr."""
    spec = tmp_path / "missing.yaml"
    cli = Cli(tmp_path / "home")
    for args in (("validate", spec), ("schema", "run"), ("nosuchverb",), ("runs", "list")):
        inside, outside = cli(*args), cli(*args, subprocess=True)
        assert (inside.code, inside.out, inside.err) == (outside.code, outside.out, outside.err)


def test_an_in_process_call_leaves_nothing_behind(tmp_path: Path) -> None:
    """`--home` sets $TRAINSTACK_HOME for the verb; the call's cwd, environment and signal
    handlers are the test's again afterwards."""
    import os
    import signal

    before = (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGTERM))
    done = Cli()("--home", tmp_path / "elsewhere", "runs", "list", cwd=tmp_path)
    assert done.code == 0, done.err
    assert (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGTERM)) == before
    assert (tmp_path / "elsewhere").is_dir()


def test_an_in_process_crash_is_a_traceback_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """As `python -m trainstack` would show an uncaught exception."""

    def broken(name: str, known: object) -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr("trainstack.suggest.did_you_mean", broken)
    done = Cli()("nosuchverb")
    assert done.code == 1 and "Traceback" in done.err and "RuntimeError: a bug" in done.err
    with pytest.raises(AssertionError):
        Cli(forbid_traceback=True)("nosuchverb")


def test_an_in_process_hang_times_out_as_a_subprocess_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def hang(name: str, known: object) -> str:
        time.sleep(60)
        return ""

    monkeypatch.setattr("trainstack.suggest.did_you_mean", hang)
    with pytest.raises(subprocess.TimeoutExpired):
        Cli()("nosuchverb", timeout=0.5)


def test_popen_keywords_and_the_marker_choose_a_process(cli: Cli) -> None:
    assert not cli.subprocess
    done = cli("schema", "run", start_new_session=True)  # only a process can take it
    assert done.code == 0 and '"$schema"' in done.out


@pytest.mark.subprocess
def test_the_subprocess_marker_gives_a_process_runner(cli: Cli) -> None:
    assert cli.subprocess


def test_the_caches_kept_across_calls_exist_and_the_rest_are_emptied(tmp_path: Path) -> None:
    import functools
    import importlib

    from tests import clirunner
    from trainstack.policy import admission
    from trainstack.render import engine

    for module, name in clirunner._SAME_IN_ANY_PROCESS:
        kept = getattr(importlib.import_module(module), name)
        assert isinstance(kept, functools._lru_cache_wrapper), (module, name)
    engine.environment()
    admission._program("1 + 1 == 2")
    Cli(tmp_path / "home")("validate", str(REPO / "components" / "mnist-ddp"))
    assert engine.environment.cache_info().currsize == 0  # as in a fresh process
    assert admission._program.cache_info().currsize >= 1  # the same in any process
