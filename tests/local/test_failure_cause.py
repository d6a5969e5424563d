"""A failed run's reason names what caused the failure first. When one replica of a job is
SIGKILLed and recreated (restartPolicy ExitCode), a peer that lost it fails later, with exit 1,
and that failure ends the job; before, the reason was only "master-0 exited with exit code 1
(not retried)", which sent the reader to the wrong replica's log. Real processes, real SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import wait_for, write_run
from trainstack.local.procgroup import REPLICA_TAG_ENV, replica_tag, tagged_pids
from trainstack.registry import Registry, RunStatus

pytestmark = pytest.mark.slow  # replicas as real processes, killed


def _starts(gate: Path) -> list[str]:
    path = gate / "starts"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def test_the_reason_names_the_killed_replica_before_the_peer_that_failed_after_it(
    tmp_path: Path, cli: Cli
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    spec = write_run(
        tmp_path,
        "gate",
        "cause",
        resources={"master": {"replicas": 1}, "worker": {"replicas": 1}},
        faultTolerance={"maxRestarts": 2},  # ExitCode: 137 is recreated, 1 is not
        env={"GATE": str(gate)},
    )
    runner = cli.start("run", spec, "--local", "--grace", "2")
    try:
        wait_for("both replicas' start", lambda: len(_starts(gate)) == 2, timeout=300)
        (run_dir,) = (cli.home / "runs").iterdir()
        # Every process of worker-0, as a node failure ends a pod.
        for pid in tagged_pids(replica_tag(run_dir.name, "worker-0"), REPLICA_TAG_ENV):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for("worker-0's recreation", lambda: _starts(gate).count("worker-0") == 2, 300)
        # The master, having lost its peer, fails: exit 1, not retried, which ends the job.
        # Whole or not at all: the gate opens when the file exists, and an instant between its
        # creation and the write would read as empty, an exit 0 that leaves the job waiting.
        (gate / ".open-master-0").write_text("1")
        (gate / ".open-master-0").rename(gate / "open-master-0")
        stdout, stderr = runner.communicate(timeout=300)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 1, stdout + stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.FAILED
    reason = record.reason or ""
    assert reason.startswith("worker-0 exited with exit code 137 (SIGKILL) first"), reason
    assert "(worker-0 was recreated " in reason, reason
    assert reason.endswith("then master-0 exited with exit code 1 (not retried)"), reason
    shown = cli("runs", "show", record.id)
    assert f"failed: {reason}\n" in shown.out, shown.out
    assert f"error: run {record.id} failed: {reason}" in stderr, stderr
