"""`run --local` with its stdout closed early, and setup failures: no traceback from the dead
man's switch, and the run's outcome is its replicas'."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import COMPONENTS, REPO, write_run
from trainstack.registry import Registry, RunStatus


def test_a_setup_failure_is_one_error_without_a_sidecar_traceback(tmp_path: Path, cli: Cli) -> None:
    comp = tmp_path / "probe"
    shutil.copytree(COMPONENTS / "probe", comp)
    (comp / "src" / "leak").symlink_to("/etc/hostname")  # refused while the sandbox is made
    spec = write_run(tmp_path, comp / "component.yaml", "leaky", parameters={"mode": "quick"})
    for _ in range(3):  # the sidecar's start races the runner's failure: try it a few times
        result = cli("run", spec, "--local", "--no-install")
        assert result.returncode == 2, result.stderr
        assert "outside the component's directory" in result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert "BrokenPipeError" not in result.stderr, result.stderr
        assert result.stderr.count("error:") == 1, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_closed_stdout_only_stops_the_printing(reader: str, tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path, "probe", "piped", parameters={"mode": "count", "steps": 4, "seconds": 0.1}
    )
    # bash: PIPESTATUS gives the runner's own exit code; values travel as arguments.
    script = (
        f'"$0" -m trainstack run "$1" --local --no-install | {reader}; '
        'echo "runner-rc=${PIPESTATUS[0]}" >&2'
    )
    result = subprocess.run(
        ["bash", "-c", script, sys.executable, str(spec)],
        cwd=REPO,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "runner-rc=0" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.SUCCEEDED, record.reason
    assert record.reason is None
    assert record.run_dir is not None
    assert (record.run_dir / "output" / "state" / "count").read_text() == "4"
