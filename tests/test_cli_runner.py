"""One way to run the CLI in tests (issue 14, item 20): tests/clirunner.py's `Cli`, taken as the
`cli` fixture (tests/conftest.py). No test module spawns `python -m trainstack` itself, builds a
click runner, calls `main` in-process, or defines a runner class or fixture of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.clirunner import Cli

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
