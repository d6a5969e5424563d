"""`pytest --update-golden` (and TRAINSTACK_UPDATE_GOLDEN=1, still) reach the golden tests through
the `golden_update` fixture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import UPDATE_GOLDEN_ENV, update_golden

ROOT = Path(__file__).resolve().parents[1]
PROBE_ENV = "TRAINSTACK_GOLDEN_PROBE_OUT"


def test_probe(golden_update: bool, request: pytest.FixtureRequest) -> None:
    """Run by the test below in a child pytest: writes what the fixture says."""
    out = os.environ.get(PROBE_ENV)
    if out:
        Path(out).write_text(str(golden_update), encoding="utf-8")
    assert golden_update is update_golden(request.config)


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [(None, None, "False"), ("--update-golden", None, "True"), (None, "1", "True")],
)
def test_update_golden_reaches_the_fixture(
    tmp_path: Path, flag: str | None, env: str | None, expected: str
) -> None:
    out = tmp_path / "probe.txt"
    environ = {k: v for k, v in os.environ.items() if k != UPDATE_GOLDEN_ENV}
    environ[PROBE_ENV] = str(out)
    if env is not None:
        environ[UPDATE_GOLDEN_ENV] = env
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"{Path(__file__).relative_to(ROOT)}::test_probe",
        *([flag] if flag else []),
    ]
    proc = subprocess.run(args, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_text(encoding="utf-8") == expected
