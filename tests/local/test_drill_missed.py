"""A preemption drill that lands after a replica's work was done misses, and says so; the run ends
as the job would have without it. Before, a drill that caught a DDP master in its last moments
(its model written, its peers finishing) recreated it, counted: the new master waited for peers
that had finished, the run hung for minutes and was recorded failed with its model written; and
a drill for a replica that had already exited was dropped without a word. Real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import wait_for, write_run
from trainstack.registry import Registry, RunRecord, RunStatus

pytestmark = pytest.mark.slow  # replicas as real processes, deleted by a drill

RESOURCES = {"master": {"replicas": 1}, "worker": {"replicas": 1}}


def _starts(gate: Path) -> list[str]:
    path = gate / "starts"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def _only(home: Path) -> tuple[RunRecord, int]:
    with Registry.open(home) as reg:
        (record,) = reg.list()
        return record, len(reg.restarts(record.id))


def _log(home: Path, key: str) -> str:
    runs = home / "runs"
    logs = [d / "logs" / f"{key}.log" for d in runs.iterdir()] if runs.is_dir() else []
    return logs[0].read_text() if logs and logs[0].exists() else ""


def _finish(runner: subprocess.Popen[str], gate: Path) -> tuple[str, str]:
    """The run's output once it ended; a master the drill had recreated is let go, so that the
    run ends whatever the runner did with the drill."""
    try:
        wait_for(
            "the run's end or the master's recreation",
            lambda: runner.poll() is not None or _starts(gate).count("master-0") > 1,
            timeout=300,
        )
        (gate / "open-master-0").touch()
        stdout, stderr = runner.communicate(timeout=300)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    return stdout, stderr


def test_a_drill_that_lands_as_the_job_finishes_misses_and_the_run_succeeds(
    tmp_path: Path, cli: Cli
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    # The worker finishes as the master is stopped: the shape of a DDP job whose ranks were all
    # past their last collective when the drill's SIGTERM reached the master.
    (gate / "on-term-master-0").write_text("worker-0\n")
    spec = write_run(
        tmp_path,
        "gate",
        "late-drill",
        resources=RESOURCES,
        faultTolerance={"maxRestarts": 2},  # ExitCode: the deleted master's 143 is failed over
        env={"GATE": str(gate)},
    )
    runner = cli.start("run", spec, "--local", "--preempt", "master-0@2", "--grace", "2")
    stdout, stderr = _finish(runner, gate)
    assert _starts(gate).count("master-0") == 1, _starts(gate)  # not recreated
    assert runner.returncode == 0, stdout + stderr
    record, restarts = _only(cli.home)
    assert record.status is RunStatus.SUCCEEDED, record.reason
    assert record.restarts == 0 and restarts == 0
    assert "preemption drill missed: every other replica exited 0 after master-0" in stdout, (
        stdout + stderr
    )
    exits = {e.key: (e.exit_code, e.stopped) for e in record.exits}
    assert exits == {"master-0": (143, True), "worker-0": (0, False)}, exits
    shown = cli("runs", "show", record.id)
    assert "master-0: stopped when the job ended" in shown.out, shown.out


def test_a_drill_for_a_replica_that_had_exited_misses_and_says_so(tmp_path: Path, cli: Cli) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "open-worker-0").touch()  # the worker is done at once; the master waits
    spec = write_run(tmp_path, "gate", "gone-drill", resources=RESOURCES, env={"GATE": str(gate)})
    runner = cli.start("run", spec, "--local", "--preempt", "worker-0@2", "--grace", "2")
    try:
        # Said in the replica's log as in the live view: the master waits until then.
        wait_for("the drill's word", lambda: "drill missed" in _log(cli.home, "worker-0"), 60)
    finally:
        (gate / "open-master-0").touch()
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 0, stdout + stderr
    assert "preemption drill missed: worker-0 had already exited (exit code 0)" in stdout, (
        stdout + stderr
    )
    record, restarts = _only(cli.home)
    assert record.status is RunStatus.SUCCEEDED and restarts == 0
