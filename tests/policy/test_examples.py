"""The shipped example runs pass the policies on the environments they are written for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# local*.yaml runs are written for the kind cluster of Pulumi.local.yaml; the others for ack-dev.
EXAMPLES = [(p, "local" if p.name.startswith("local") else "ack-dev")
            for p in sorted((REPO / "components").glob("*/runs/*.yaml"))]


# Until the example runs fit their environments (teams, sizes, the platform's buckets and
# registry: branch issue-10b), several fail rules or do not render; the lead removes this
# marker when both are merged.
@pytest.mark.xfail(reason="example runs fit their environments in issue-10b", strict=False)
@pytest.mark.parametrize(("run", "env"), EXAMPLES, ids=[f"{p.parent.parent.name}/{p.name}-{e}"
                                                        for p, e in EXAMPLES])
def test_the_shipped_example_passes_on_its_environment(run: Path, env: str) -> None:
    done = subprocess.run([sys.executable, "-m", "trainstack", "policy", "check", str(run),
                           "--env", env, "--project", str(REPO)], capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
