"""Shared CLI options are defined once, each with its environment variable, and the verbs keep
no service logic of their own."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import click

from trainstack import logview
from trainstack.cli import main as cli_main
from trainstack.local import runlist
from trainstack.registry.model import RunKind, RunRecord, RunStatus

CLI = Path(cli_main.__file__).resolve().parent
SHARED = {
    "--home": "TRAINSTACK_HOME",
    "--components": "TRAINSTACK_COMPONENTS",
    "--backend": "TRAINSTACK_BACKEND_URL",
    "--project": "TRAINSTACK_PROJECT",
}


def _commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli_main.cli)
    for name in cli_main.VERBS:
        command = cli_main.cli.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from ((f"{name} {sub}", c) for sub, c in command.commands.items())
        else:
            yield name, command


def test_every_shared_option_reads_its_environment_variable() -> None:
    seen = set()
    for verb, command in _commands():
        for param in command.params:
            for flag, envvar in SHARED.items():
                if flag in getattr(param, "opts", ()):
                    seen.add(flag)
                    assert param.envvar == envvar, f"{verb} {flag}: envvar {param.envvar!r}"
    assert seen == set(SHARED)


def test_verbs_hold_no_polling_loops_or_table_layout() -> None:
    found = []
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("sleep", "ljust"):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.While):
                found.append(f"{path.name}:{node.lineno}: while loop")
    assert not found, "move it into the verb's service module:\n" + "\n".join(found)


def test_runs_table_and_json_come_from_the_service_module() -> None:
    record = RunRecord(
        id="r1",
        name="mnist",
        component="mnist",
        component_version="1.0.0",
        kind=RunKind.LOCAL,
        job_type="pytorch",
        experiment=None,
        tags={},
        status=RunStatus.SUCCEEDED,
        created_at=0.0,
        started_at=10.0,
        finished_at=75.0,
        exits=(),
        restarts=1,
        run_dir=None,
        runner_pid=None,
        runner_started_at=None,
        stack_name=None,
        spec_path=None,
        reason=None,
    )
    found = runlist.listing([record])
    lines = runlist.table(found).splitlines()
    assert lines[0].split() == [
        "ID",
        "STATUS",
        "COMPONENT",
        "EXPERIMENT",
        "CREATED",
        "DURATION",
        "RESTARTS",
    ]
    assert lines[1].split()[:4] == ["r1", "succeeded", "mnist@1.0.0", "-"]
    assert json.loads(json.dumps(runlist.to_json(found)))[0]["component"] == "mnist@1.0.0"


def test_log_waiting_and_grep_come_from_the_service_module(tmp_path: Path) -> None:
    calls = []

    def running() -> bool:  # the replica's log appears on the second look
        calls.append(1)
        (tmp_path / "worker-0.log").write_text("a\n", encoding="utf-8")
        return True

    files = logview.wait_for(tmp_path, None, None, running=running)
    assert [f.key for f in files] == ["worker-0"] and calls == [1]
    out: list[bytes] = []
    write = logview.grep_lines(out.append, logview.line_filter(logview.compile_grep("keep"), None))
    write(b"keep 1\ndrop\nke")
    write(b"ep 2\n")
    assert out == [b"keep 1\n", b"keep 2\n"]
