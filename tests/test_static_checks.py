"""ruff and strict mypy are part of the test suite, so CI holds every change to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # strict mypy cold is tens of seconds

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_ruff_and_mypy_are_pinned_exactly() -> None:
    import tomllib
    from importlib.metadata import version

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {
        req.split("==")[0]: req.split("==")[1]
        for req in extras["project"]["optional-dependencies"]["test"]
        if "==" in req
    }
    assert set(pins) >= {"ruff", "mypy"}, pins
    # The environment runs what is pinned (reinstall the test extras after changing a pin).
    assert (version("ruff"), version("mypy")) == (pins["ruff"], pins["mypy"])


def test_ruff_finds_nothing() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_ruff_formatted() -> None:
    # Component code is excluded in pyproject.toml: it is hashed per released version.
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_strict_mypy_finds_nothing() -> None:
    # A persistent cache (.mypy_cache in the checkout, gitignored) saves most of the 20-40 s a
    # cold run takes. Its result cannot depend on stale state: mypy's cache is content-keyed;
    # each module's entry records the hash of its source and of the options, and mypy's
    # version, and a module whose source, options or dependencies changed is checked again.
    # Only the time a run takes depends on what an earlier run left behind.
    result = _run("mypy", "--cache-dir", str(ROOT / ".mypy_cache"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
