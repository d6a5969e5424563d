"""A run's metric summary: written when the run ends, read by listings instead of every point,
and never trusted once the metrics it was computed from have changed. Before, the console's
metric column and `runs list --metric` read every listed run's whole series on every request
(11-18 s per page with 50 runs of 100,000 points; benchmarks/bench_ui.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.metrics.conftest import charts_run
from tests.ui.conftest import LOOPBACK
from trainstack.contract.rundir import RunDir
from trainstack.metrics import summary
from trainstack.registry import Registry


def _run(cli: Cli, tmp_path: Path, name: str) -> Path:
    done = cli("run", charts_run(tmp_path, name, layout="good", seconds=0.2), "--local")
    assert done.returncode == 0, done.stderr
    with Registry.open(cli.home) as reg:
        root = reg.resolve(name).run_dir
    assert root is not None
    return root


@pytest.mark.slow
def test_an_ended_run_keeps_its_summary_and_it_is_what_the_series_say(
    tmp_path: Path, cli: Cli
) -> None:
    root = _run(cli, tmp_path, "kept")
    doc = json.loads(RunDir(root).metrics_summary.read_text())
    assert doc["version"] == summary.VERSION
    assert summary.read(root) == summary.compute(root)
    assert {v.id for v in summary.compute(root)} >= {"epoch/loss", "epoch/accuracy"}


@pytest.mark.slow
def test_a_summary_of_changed_metrics_is_not_used(tmp_path: Path, cli: Cli) -> None:
    root = _run(cli, tmp_path, "changed")
    assert summary.read(root) is not None
    series = next(p for p in RunDir(root).metrics.rglob("*") if p.is_file() and p.suffix != ".json")
    with series.open("a") as fh:
        fh.write("\n")
    assert summary.read(root) is None


@pytest.mark.slow
def test_listings_read_the_summary_not_the_points(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _run(cli, tmp_path, "listed")
    RunDir(root).metrics_summary.unlink()  # an older run, ended before summaries were kept
    first = cli("runs", "list", "--metric", "epoch/accuracy")
    assert first.returncode == 0 and "listed" in first.stdout
    assert RunDir(root).metrics_summary.is_file()  # kept by the first listing, once

    def no_points(root: Path) -> object:
        raise AssertionError("a listing read every point")

    monkeypatch.setattr(summary, "compute", no_points)
    again = Cli(cli.home).invoke("runs", "list", "--metric", "epoch/accuracy")
    assert again.code == 0 and again.out.splitlines()[1:] == first.stdout.splitlines()[1:]

    import trainstack.ui.charts as charts
    from trainstack.ui.app import UiConfig, create_app

    monkeypatch.setattr(charts, "run_view", no_points)
    with create_app(UiConfig(home=cli.home)).test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        page = client.get("/?metric=epoch/accuracy")
    assert page.status_code == 200
    assert "(best " in page.get_data(as_text=True)
