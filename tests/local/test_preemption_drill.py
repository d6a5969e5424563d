"""Preemption drills: `run --local --preempt ROLE-INDEX@SECONDS` deletes that
replica's pod as a preemption or drain would (SIGTERM, grace, SIGKILL). On the platform's
Kubernetes (1.27 or later) the kubelet marks the deleted pod Failed (exit 143) before removing
it, and KubeDL v0.5.0 judges it: under ExitCode it is failed over, counted, and a component that
checkpoints resumes; without faultTolerance the job fails (docs/local.md, "Preemption drills").
Before this no verb could delete a replica's pod; until the drill followed Kubernetes 1.27, a
drill without faultTolerance was recreated uncounted and the run succeeded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.registry import Registry, RunStatus


@pytest.mark.slow
def test_a_preempted_master_resumes_from_its_checkpoint(tmp_path: Path, cli: Cli) -> None:
    ckpt = tmp_path / "ckpt"
    spec = write_run(
        tmp_path,
        "checkpointer",
        "drill",
        # 2.5 s of steps: the drill at 2 s always finds the first attempt part-way
        parameters={"steps": 25, "pause": 0.1},
        outputs={"checkpoints": f"file://{ckpt}/"},
        resources={"master": {"replicas": 1}},
        faultTolerance={"maxRestarts": 1},
    )  # ExitCode: the deleted pod's 143 is failed over
    done = cli("run", spec, "--local", "--preempt", "master-0@2", "--grace", "1")
    assert done.returncode == 0, done.output
    starts = [int(x) for x in (ckpt / "starts").read_text().split()]
    assert len(starts) == 2 and starts[0] == 0 and starts[1] > 0, starts
    assert (ckpt / "step").read_text() == "25"
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.SUCCEEDED
    assert [(h.key, h.reason, h.counted) for h in history] == [("master-0", "preempted", True)]


@pytest.mark.slow
def test_a_drill_without_fault_tolerance_fails_the_run(tmp_path: Path, cli: Cli) -> None:
    ckpt = tmp_path / "ckpt"
    spec = write_run(
        tmp_path,
        "checkpointer",
        "drill",
        parameters={"steps": 10},
        outputs={"checkpoints": f"file://{ckpt}/"},
        resources={"master": {"replicas": 1}},
    )  # no faultTolerance: restartPolicy Never
    done = cli("run", spec, "--local", "--preempt", "master-0@2", "--grace", "1")
    assert done.returncode == 1, done.output
    assert "master-0's pod was deleted (preempted)" in done.output, done.output
    assert len((ckpt / "starts").read_text().split()) == 1  # never recreated
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.FAILED


def test_a_drill_must_name_a_replica_of_the_run(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, "checkpointer", "drill", resources={"master": {"replicas": 1}})
    done = cli("run", spec, "--local", "--preempt", "worker-3@2")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--preempt worker-3@2: the run has no replica worker-3" in done.stderr
    assert "its replicas: master-0" in done.stderr
    done = cli("run", spec, "--local", "--preempt", "master-0")
    assert done.returncode != 0 and "expected ROLE-INDEX@SECONDS" in done.stderr
    with Registry.open(cli.home) as reg:
        assert reg.list() == []  # refused before anything was recorded
