"""Run the real `trainstack` CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    code: int
    out: str
    err: str


def trainstack(*args: str | Path, cwd: Path = ROOT, timeout: float = 120) -> Result:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRAINSTACK_COMPONENTS", None)
    proc = subprocess.run([sys.executable, "-m", "trainstack", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout
    return Result(proc.returncode, proc.stdout, proc.stderr)
