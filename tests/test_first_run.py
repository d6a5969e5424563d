"""A newcomer's first run shows only what matters, and what trainstack imports is what it
declares."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack.launcher import FILES

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    """The plain dependencies and the cluster extra's (trainstack.extras: a verb that needs one
    of those says which extra to install)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = [*project["dependencies"], *project["optional-dependencies"]["cluster"]]
    return {_norm(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in deps}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.slow  # a static check over the whole source tree
def test_every_module_trainstack_imports_is_a_runtime_dependency() -> None:
    """numpy reached users only through matplotlib; a module trainstack imports itself is
    declared, so that the plain set-up (README) has it whatever its other packages do."""
    imported: set[str] = set()
    for path in (ROOT / "trainstack").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    # the launcher's own modules, imported by name beside it in a pod (trainstack.launcher.FILES)
    shipped = {name.removesuffix(".py") for name in FILES}
    imported -= set(sys.stdlib_module_names) | {"trainstack", "__future__"} | shipped
    providers = md.packages_distributions()
    declared = _declared()
    missing = {
        m: providers.get(m)
        for m in sorted(imported)
        if not {_norm(d) for d in providers.get(m, [])} & declared
    }
    assert not missing, f"imported by trainstack but declared nowhere: {missing}"


def _readme_main_job() -> list[str]:
    setup = next(
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if "trainstack run" in line and line.startswith("python3 -m venv")
    )
    step = next(s for s in setup.split("&&") if "trainstack run" in s)
    argv = shlex.split(step)
    assert argv[0].endswith("trainstack")
    return argv[1:]


# What the first run shows: the runner's own lines, the training script's lines, the summary.
_EXPECTED = [
    r"\[trainstack\] run \S+: mnist-ddp@\S+ \(pytorch\), 3 replica\(s\): master-0, worker-0, "
    r"worker-1",
    r"\[trainstack\] run directory \S+",
    r"(master|worker)-\d \| rank \d/3 ready \(pid \d+, master \S+\)",
    r"master-0 \| epoch \d/3 loss [\d.]+ accuracy [\d.]+ \([\d.]+s\)",
    r"master-0 \| model written to \S+",
    r"run \S+ succeeded in [\d.]+m?s",
    r"  (output|logs|metrics|charts|details|sandbox): +.+",
]


@pytest.mark.slow  # README's main job, trained for real
def test_readme_main_job_prints_only_what_matters(tmp_path: Path) -> None:
    args = _readme_main_job()
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "TRAINSTACK_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
    }
    result = Cli()(*args, cwd=ROOT, env=env, inherit_env=False, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    # A replica stopped by SIGTERM is reported as "exited with exit code 143 (SIGTERM)"; the
    # bare digits are not searched for, since pids, ports and run ids contain them by chance.
    for noise in ("NumPy", "Warning", "warn", "exited with", "exit code", "SIGTERM", "Traceback"):
        assert noise not in out, f"{noise!r} in the first run's output:\n{out}"
    unexpected = [
        line for line in out.splitlines() if not any(re.fullmatch(p, line) for p in _EXPECTED)
    ]
    assert not unexpected, "\n".join(unexpected)
    assert sum("| epoch " in line for line in out.splitlines()) == 3
