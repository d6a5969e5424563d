"""The example components in components/: one per job type, each with runs, all valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from tests.spec.specfiles import COMPONENTS
from trainstack.contract.framework import mpi_slots_per_worker
from trainstack.kubedl import mpi_hostfile
from trainstack.local.jobplan import plan_job
from trainstack.local.sandbox import Layout
from trainstack.spec import load_component, load_run
from trainstack.spec.check import validate
from trainstack.spec.model import JobType


def test_every_job_type_but_custom_has_an_example_with_runs() -> None:
    report = validate([COMPONENTS])
    assert report.ok, [d.render() for d in report.diagnostics]
    kinds = {c.job_type for c in report.components}
    assert kinds >= set(JobType) - {JobType.CUSTOM}
    for comp in report.components:
        assert comp.source is not None
        runs = [r for r in report.runs if r.component.ref == comp.ref]
        assert runs, f"{comp.ref} has no run"
        assert (comp.source.parent / "runs").is_dir()
        if comp.code is not None and comp.code.kind == "local":
            assert comp.code.path is not None and any(comp.code.path.glob("*.py"))


@pytest.mark.slow
def test_batch_scoring_sample_runs_locally(tmp_path: Path) -> None:
    run_file = COMPONENTS / "batch-scoring" / "runs" / "local-sample.yaml"
    scores = tmp_path / "scores"
    result = trainstack(
        "run", "--local", "--home", tmp_path / "home", "--output", f"scores={scores}", run_file
    )
    assert result.code == 0, result.err + result.out
    rows = sorted(line for f in scores.glob("*.csv") for line in f.read_text().splitlines()[1:])
    assert [row.split(",")[0] for row in rows] == ["r1", "r2", "r3", "r4", "r5"]
    assert all(row.split(",")[2] in ("0", "1") for row in rows)


@pytest.mark.slow
def test_credit_xgb_sample_runs_locally_with_one_tracker_and_each_shard_once(
    tmp_path: Path,
) -> None:
    """The shipped XGBoost job runs on its sample shards with xgboost
    installed from its requirements.txt. At 8f06a63 master-0 and worker-0 (both RANK 0) each
    started a tracker on one port ("Address already in use") and read the same shard."""
    run_file = COMPONENTS / "credit-xgb" / "runs" / "local-sample.yaml"
    model = tmp_path / "model"
    home = tmp_path / "home"
    result = trainstack("run", "--local", "--home", home, "--output", f"model={model}", run_file)
    assert result.code == 0, result.err + result.out
    assert "succeeded" in result.out
    saved = json.loads((model / "model.json").read_text())
    assert "learner" in saved  # XGBoost's JSON model format
    (run_dir,) = (home / "runs").iterdir()
    install = (run_dir / "logs" / "install.log").read_text()
    assert "xgboost-cpu" in install  # requirements.txt was installed (or found satisfied)
    logs = {p.stem: p.read_text() for p in (run_dir / "logs").glob("*-*.log")}
    trained = sorted(
        line.split("training on ")[1].strip()
        for text in logs.values()
        for line in text.splitlines()
        if "training on " in line
    )
    assert trained == ["part-0000.csv", "part-0001.csv", "part-0002.csv"]
    assert sum(text.count("Task ") for text in logs.values()) == 3  # three ranks, one tracker
    assert "Address already in use" not in "".join(logs.values())


def test_every_example_has_a_local_run_that_plans(tmp_path: Path) -> None:
    """Every shipped example says how it runs on this machine — a run whose
    bindings are files it ships — and the local runner can plan it (contract env, config files,
    start order). census-tf and cifar-horovod need TensorFlow, or mpirun and Horovod, which this
    machine lacks, so they are planned, not run (their READMEs say what they need)."""
    for comp in sorted(p.parent for p in COMPONENTS.glob("*/component.yaml")):
        local_runs = sorted((comp / "runs").glob("local*.yaml"))
        assert local_runs, f"{comp.name} has no local run"
        assert (comp / "README.md").is_file() or comp.name in ("mnist-ddp", "batch-scoring")
        for run_file in local_runs:
            run = load_run(run_file)
            for binding in run.inputs.values():
                assert binding.uri.startswith("file://"), (run_file, binding.uri)
                assert Path(binding.path).exists(), (run_file, binding.uri)
            plan = plan_job(
                run,
                Layout(tmp_path / run.name),
                run_id="r",
                venv=None,
                grace_seconds=1,
                available_gpus=(),
            )
            assert len(plan.launches) == run.total_replicas


def test_cifar_horovod_starts_one_rank_per_slot_locally_and_on_the_cluster() -> None:
    """Without `-np`, mpirun starts one rank per hostfile slot; the local
    hostfile has as many as the operator's (launcher first, slotsPerWorker each)."""

    comp = COMPONENTS / "cifar-horovod"
    assert "-np" not in load_component(comp / "component.yaml").command.split()
    cluster = load_run(comp / "runs" / "4x1-gpu.yaml")
    hosts = mpi_hostfile("j", cluster.resources["worker"].replicas, mpi_slots_per_worker(cluster))
    # 4 ranks on 4 one-GPU hosts (ack-dev's GPU nodes hold one GPU each)
    assert hosts.splitlines() == [
        "j-launcher-0 slots=1",
        "j-worker-0 slots=1",
        "j-worker-1 slots=1",
        "j-worker-2 slots=1",
    ]
    assert cluster.resources["launcher"].gpu == 1  # the launcher hosts one of them
