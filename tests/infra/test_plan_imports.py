"""`plan` imports what its environment needs (issue 23): a kubeconfig environment's plan never
loads Alibaba Cloud's SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_plan_of_a_run_on_a_kubeconfig_environment_leaves_alicloud_unimported() -> None:
    run = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"
    script = (
        "import sys\nfrom trainstack.cli.main import main\n"
        "try:\n"
        f"    main(['plan', {str(run)!r}, '--env', 'local', '--json'])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('alicloud imported:', 'pulumi_alicloud' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"kind": "run"' in proc.stdout  # the plan was made and printed
    assert proc.stdout.strip().splitlines()[-1] == "alicloud imported: False"
