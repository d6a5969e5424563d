"""One rank of a 3-replica PyTorch DDP job (real gloo, real processes) dies as a
pod does — every process of that replica SIGKILLed. KubeDL recreates that pod alone; its peers
lose their collective and exit 1, which fails the job. With `spec.torchElastic` the command runs
under torchrun's elastic agent: the recreated replica's agent rejoins, every agent restarts its
worker, and the job resumes from its checkpoint and succeeds. At 8f06a63 the runner restarted
the whole job, so the first case succeeded locally though it fails on a cluster, and
torchElastic did not exist."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import REPO, wait_for, write_run
from trainstack.kubedl import RETRYABLE_EXIT_CODES
from trainstack.local.procgroup import REPLICA_TAG_ENV, replica_tag, tagged_pids
from trainstack.registry import Registry, RunRecord, RunStatus

pytestmark = pytest.mark.slow  # real PyTorch DDP replicas

MNIST = REPO / "components" / "mnist-ddp"
# Epochs long enough (a few seconds each on a loaded machine) that the kill lands mid-run.
TRAINING = {"epochs": 4, "samples": 12000, "batch-size": 32}
RESOURCES = {"master": {"replicas": 1}, "worker": {"replicas": 2}}


def _only_run(home: Path) -> RunRecord:
    with Registry.open(home) as reg:
        (record,) = reg.list()
    return record


def _kill_replica_after_first_checkpoint(cli: Cli, runner: subprocess.Popen[str], key: str) -> Path:
    """Wait (event-driven) for the first checkpoint, then SIGKILL every process of replica
    `key`, as a node failure or eviction ends a pod. Returns the run directory."""
    runs = cli.home / "runs"

    def checkpointed() -> bool:
        if runner.poll() is not None:
            raise AssertionError(
                "the run ended before its first checkpoint: " + "".join(runner.communicate())
            )
        return runs.is_dir() and any(
            (d / "output" / "checkpoints" / "latest").exists() for d in runs.iterdir()
        )

    wait_for("the first checkpoint", checkpointed, timeout=300)
    run_dir = next(runs.iterdir())
    pids = tagged_pids(replica_tag(run_dir.name, key), REPLICA_TAG_ENV)
    assert pids, f"no process of {key}"
    for pid in pids:
        # Killing one may end the rest first (in the sandbox, the pod's processes end with its
        # PID 1): what is already gone is what this wanted.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return run_dir


def test_without_torch_elastic_a_killed_rank_fails_the_job_as_on_a_cluster(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(
        tmp_path,
        MNIST,
        "ddp-no-elastic",
        parameters=TRAINING,
        resources=RESOURCES,
        faultTolerance={"maxRestarts": 3},
        outputs={"checkpoints": f"file://{tmp_path / 'ckpt'}/"},
    )
    runner = cli.start("run", spec, "--local", "--grace", "5")
    run_dir = _kill_replica_after_first_checkpoint(cli, runner, "worker-1")
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode != 0, stdout + stderr
    record = _only_run(cli.home)
    assert record.status is RunStatus.FAILED, record.reason
    # A surviving rank lost its peer and died of it (exit 1, or 134 when gloo aborts):
    # not a retryable code, so the job fails, whatever restarts remain.
    codes = {e.key: (e.exit_code, e.stopped) for e in record.exits}
    peers = [codes["master-0"], codes["worker-0"]]
    assert any(
        not stopped and code not in (None, 0, *RETRYABLE_EXIT_CODES) for code, stopped in peers
    ), codes
    assert record.reason is not None and "(not retried)" in record.reason
    # Only worker-1 was (or was about to be) recreated: the master ran once.
    assert (run_dir / "logs" / "master-0.log").read_text().count("rank 0/3 ready") == 1


@pytest.mark.slow
def test_with_torch_elastic_the_job_resumes_from_its_checkpoint_and_succeeds(
    tmp_path: Path, cli: Cli
) -> None:
    ckpt, model = tmp_path / "ckpt", tmp_path / "model"
    spec = write_run(
        tmp_path,
        MNIST,
        "ddp-elastic",
        parameters=TRAINING,
        resources=RESOURCES,
        faultTolerance={"maxRestarts": 3},
        torchElastic={"maxRestarts": 3},
        outputs={"checkpoints": f"file://{ckpt}/", "model": f"file://{model}/"},
    )
    runner = cli.start("run", spec, "--local", "--grace", "5")
    run_dir = _kill_replica_after_first_checkpoint(cli, runner, "worker-1")
    stdout, stderr = runner.communicate(timeout=600)
    assert runner.returncode == 0, stdout + stderr
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED, record.reason
    with Registry.open(cli.home) as reg:
        history = reg.restarts(record.id)
    # The killed replica, recreated once, as KubeDL would: the one restart counted.
    assert [h.key for h in history if h.counted] == ["worker-1"], history
    # The others' agents restarted their workers in place to take it back in: recorded too.
    assert {h.key for h in history if not h.counted} >= {"master-0", "worker-0"}, history
    assert record.restarts == len(history)
    logs = {p.stem: p.read_text() for p in (run_dir / "logs").glob("*-*.log")}
    # Every replica's worker resumed from a checkpoint, none started over from epoch 1.
    for key in ("master-0", "worker-0", "worker-1"):
        assert re.search(r"rank \d: resuming from epoch-\d+\.pt", logs[key]), (key, logs[key])
    # Each epoch appears once in the final history: the restart continued, it did not redo.
    rows = (run_dir / "metrics" / "epoch.csv").read_text().splitlines()[1:]
    assert [int(r.split(",")[0]) for r in rows] == [1, 2, 3, 4]
    steps = [
        int(r.split(",")[0])
        for r in (run_dir / "metrics" / "steps.csv").read_text().splitlines()[1:]
    ]
    assert steps == list(range(1, len(steps) + 1))  # the per-batch chart resumed, too
    assert (ckpt / "latest").read_text() == "epoch-0004.pt"
    assert (model / "model.json").is_file()
