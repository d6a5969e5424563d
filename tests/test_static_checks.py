"""ruff and strict mypy are part of the test suite, so CI holds every change to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_strict_mypy_finds_nothing(tmp_path: Path) -> None:
    # A private cache: the result must not depend on what an earlier run left behind.
    result = _run("mypy", "--cache-dir", str(tmp_path / "mypy-cache"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
