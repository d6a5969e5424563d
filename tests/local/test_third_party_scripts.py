"""PyTorch scripts written for the operator, not for trainstack — a
`dist_sendrecv.py`-style smoke test and a Kubeflow-mnist-style trainer, both a plain
`init_process_group` from the environment — run unchanged under `trainstack run --local` with
several replicas, directly and under `spec.torchElastic`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.registry import Registry, RunStatus

pytestmark = pytest.mark.slow  # real PyTorch processes in every replica

RESOURCES = {"master": {"replicas": 1}, "worker": {"replicas": 2}}


@pytest.mark.parametrize("elastic", [False, True], ids=["operator-env", "torch-elastic"])
def test_sendrecv_smoke_test_runs_unchanged(tmp_path: Path, cli: Cli, elastic: bool) -> None:
    extra = {"torchElastic": {"maxRestarts": 0}} if elastic else {}
    spec = write_run(
        tmp_path,
        "torch-smoke",
        "sendrecv",
        resources=RESOURCES,
        parameters={"script": "sendrecv.py"},
        **extra,
    )
    done = cli("run", spec, "--local", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.SUCCEEDED
    assert record.run_dir is not None
    logs = "".join(
        (record.run_dir / "logs" / f"{k}.log").read_text()
        for k in ("master-0", "worker-0", "worker-1")
    )
    assert logs.count(": ok") == 3, logs
    assert "rank 0: rank 2 answered 4.0" in logs
    # Each replica runs on "its own host": the pod name.
    for key in ("master-0", "worker-0", "worker-1"):
        assert f"on sendrecv-{key}: ok" in logs


def test_kubeflow_style_mnist_runs_unchanged(tmp_path: Path, cli: Cli) -> None:
    model = tmp_path / "model"
    spec = write_run(
        tmp_path,
        "torch-smoke",
        "mnist-plain",
        resources=RESOURCES,
        parameters={"script": "mnist_plain.py"},
        outputs={"model": f"file://{model}/"},
    )
    done = cli("run", spec, "--local", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "epoch 2: loss" in done.stdout
    assert (model / "mnist.pt").stat().st_size > 0
