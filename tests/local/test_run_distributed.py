"""Whole jobs through `trainstack run --local`: real replicas, real rendezvous, real restarts."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

from tests.local.conftest import Cli
from tests.local.helpers import REPO, wait_for, write_run
from trainstack.registry import Registry, RunRecord, RunStatus


def _only_run(home: Path) -> RunRecord:
    with Registry.open(home) as reg:
        (record,) = reg.list()
    return record


def test_three_pytorch_replicas_all_reduce_and_agree(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "result"
    spec = write_run(tmp_path, "allreduce", "allreduce-3",
                     outputs={"result": f"file://{out}/"},
                     resources={"master": {"replicas": 1}, "worker": {"replicas": 2}})
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))}
    assert sorted(seen) == ["rank-0.json", "rank-1.json", "rank-2.json"]
    assert {s["sum"] for s in seen.values()} == {6.0}  # 1 + 2 + 3, on every rank
    assert {s["world_size"] for s in seen.values()} == {3}
    assert seen["rank-0.json"]["env"]["MASTER_ADDR"] == "localhost"
    assert seen["rank-1.json"]["env"]["MASTER_ADDR"] == "127.0.0.1"
    assert len({s["env"]["MASTER_PORT"] for s in seen.values()}) == 1
    assert "master-0 | rank 0: all-reduce sum 6.0" in done.stdout
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert [(e.key, e.exit_code) for e in record.exits] == [
        ("master-0", 0), ("worker-0", 0), ("worker-1", 0)]


def test_tensorflow_replicas_get_a_consistent_tf_config(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "result"
    spec = write_run(tmp_path, "tfcheck", "tf-config",
                     outputs={"result": f"file://{out}/"},
                     resources={"chief": {"replicas": 1}, "ps": {"replicas": 1},
                                "worker": {"replicas": 2}})
    done = cli("run", spec, "--local", "--grace", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(seen) == ["chief-0", "ps-0", "worker-0", "worker-1"]
    clusters = {json.dumps(s["tf_config"]["cluster"], sort_keys=True) for s in seen.values()}
    assert len(clusters) == 1  # every task sees the same cluster
    cluster = next(iter(seen.values()))["tf_config"]["cluster"]
    addresses = [a for role in ("chief", "ps", "worker") for a in cluster[role]]
    assert len(addresses) == 4 == len(set(addresses))
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", a) for a in addresses)
    for key, s in seen.items():
        role, index = key.rsplit("-", 1)
        assert s["tf_config"]["task"] == {"type": role, "index": int(index)}
        assert s["problems"] == []
    # The parameter server never exits on its own: the job ends when the others succeed.
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert {e.key: e.exit_code for e in record.exits}["ps-0"] == 143


def test_sigkilled_replica_restarts_the_job_which_resumes_from_its_checkpoint(
    tmp_path: Path, cli: Cli
) -> None:
    ckpt, model = tmp_path / "ckpt", tmp_path / "model"
    spec = write_run(
        tmp_path, REPO / "components" / "mnist-ddp", "mnist-kill",
        parameters={"epochs": 4, "samples": 6000, "batch-size": 32},
        outputs={"checkpoints": f"file://{ckpt}/", "model": f"file://{model}/"},
        resources={"master": {"replicas": 1}, "worker": {"replicas": 1}},
        faultTolerance={"maxRestarts": 2},
    )
    runner = cli.start("run", spec, "--local")
    home_runs = cli.home / "runs"

    def run_dir() -> Path:
        return next(home_runs.iterdir())

    wait_for("the first checkpoint",
             lambda: home_runs.is_dir() and any(home_runs.iterdir())
             and (run_dir() / "output" / "checkpoints" / "latest").exists(), timeout=120)
    log = (run_dir() / "logs" / "worker-0.log").read_text()
    pid = int(re.search(r"rank 1/2 ready \(pid (\d+)", log).group(1))  # type: ignore[union-attr]
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = runner.communicate(timeout=180)
    assert runner.returncode == 0, stdout + stderr
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert record.restarts == 1
    master_log = (run_dir() / "logs" / "master-0.log").read_text()
    resumed = re.search(r"rank 0: resuming from epoch-(\d+)\.pt", master_log)
    assert resumed is not None, master_log
    assert "restart 1 of 2 after: worker-0 exited with exit code 137 (SIGKILL)" in master_log
    # Each epoch appears once in the final history: the restart continued, it did not redo.
    rows = (run_dir() / "metrics" / "epoch.csv").read_text().splitlines()[1:]
    assert [int(r.split(",")[0]) for r in rows] == [1, 2, 3, 4]
    steps = [int(r.split(",")[0]) for r in
             (run_dir() / "metrics" / "steps.csv").read_text().splitlines()[1:]]
    assert steps == list(range(1, len(steps) + 1))  # the per-batch chart resumed, too
    # Outputs were committed to their file:// bindings.
    assert (ckpt / "epoch-0004.pt").is_file() and (ckpt / "latest").read_text() == "epoch-0004.pt"
    assert json.loads((model / "model.json").read_text())["epoch"] == 4.0
