"""README's main job (mnist-ddp, DDP on CPUs) ends with charts to look at: both of its charts
follow the spec, and `metrics --png` draws them plus a usage chart per replica."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib import image

from tests.clirunner import Cli
from tests.local.helpers import REPO, write_run
from trainstack.metrics import series

pytestmark = pytest.mark.slow  # README's main job, trained for real


def test_mnist_ddp_writes_the_whole_spec_and_metrics_draws_it(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path,
        REPO / "components" / "mnist-ddp",
        "mnist-small",
        parameters={"epochs": 2, "samples": 1024},
        resources={"master": {"replicas": 1}, "worker": {"replicas": 1}},
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next((cli.home / "runs").iterdir())
    metrics = series.read(run_dir / "metrics")
    assert metrics.problems == ()
    epoch, steps = (c.chart for c in metrics.charts)
    assert epoch.dual and epoch.ys == ("loss", "accuracy") and not epoch.series
    assert steps.smooth and steps.series == ("batch_loss", "batch_accuracy")
    assert f"trainstack metrics {run_dir.name} --png" in done.stdout
    out = cli("metrics", run_dir.name, "--png", tmp_path / "png")
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert names == ["epoch.png", "steps.png", "usage-master-0.png", "usage-worker-0.png"]
    assert all(image.imread(tmp_path / "png" / n).shape[1] == 800 for n in names)
