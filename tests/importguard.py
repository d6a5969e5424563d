"""Which modules a CLI command imports: the command run in a fresh interpreter (so nothing an
earlier test imported counts), then `sys.modules` read (the guards that keep heavy imports lazy)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_by(argv: list[str], watched: set[str], **env: str) -> tuple[set[str], str]:
    """The top-level packages of `watched` that `trainstack ARGV` imported, and its stdout; the
    command must succeed."""
    script = (
        "import sys\nfrom trainstack.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('IMPORTED', sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    *out, last = proc.stdout.rstrip("\n").split("\n")
    assert last.startswith("IMPORTED "), proc.stdout
    return set(ast.literal_eval(last[len("IMPORTED ") :])) & watched, "\n".join(out)
