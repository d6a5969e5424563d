"""What a run cost (issue 21 item 6): resource-time (requested × wall time per replica) for every
local run, and money where its environment sets `trainstack:costs`. Before this `runs list`
had no --cost and nothing recorded resource-time."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.clirunner import Cli
from tests.local.helpers import write_run

PROJECT_YAML = {"name": "trainstack", "runtime": "python"}


def _project(tmp_path: Path, costs: object) -> Path:
    root = tmp_path / "platform"
    root.mkdir()
    (root / "Pulumi.yaml").write_text(yaml.safe_dump(PROJECT_YAML))
    config = {"trainstack:mode": "kubeconfig", "trainstack:costs": costs}
    (root / "Pulumi.priced.yaml").write_text(yaml.safe_dump({"config": config}))
    (root / "Pulumi.free.yaml").write_text(yaml.safe_dump({"config": {"trainstack:mode": "x"}}))
    return root


def test_runs_list_cost_prices_a_run_at_its_environments_rates(tmp_path: Path, cli: Cli) -> None:
    project = _project(tmp_path, {"currency": "CNY", "vcpuHour": 3600.0, "memoryGiBHour": 0})
    spec = write_run(
        tmp_path,
        "probe",
        "priced",
        {"tags": {"env": "priced"}},
        parameters={"mode": "quick", "seconds": 0.5},
        outputs={"result": f"file://{tmp_path / 'result'}/"},
        resources={"worker": {"replicas": 2, "cpu": 2}},
    )
    assert cli("run", spec, "--local").returncode == 0
    done = cli("runs", "list", "--cost", "--project", project)
    assert done.returncode == 0, done.output
    header, row = done.out.splitlines()[:2]
    assert header.split()[-3:] == ["RESOURCE-TIME", "COST", "IDLE"]
    # 2 replicas × 2 vCPU × the run's wall time, at 1 CNY per vCPU-second
    assert " vCPU-h" in row and "CNY " in row
    price = float(row.split("CNY ")[1].split()[0])
    assert price > 0
    shown = cli("runs", "show", "priced", "--json", "--project", project)
    assert shown.returncode == 0
    assert "at priced's rates" in shown.out
    # without rates (another environment, or none): resource-time, no price
    done = cli("runs", "list", "--cost", "--env", "free", "--project", project)
    assert "no rate" in done.out and "vCPU-h" in done.out


def test_bad_rates_are_one_clear_error(tmp_path: Path, cli: Cli) -> None:
    project = _project(tmp_path, {"currency": "CNY", "vcpuHour": -1})
    spec = write_run(
        tmp_path,
        "probe",
        "priced",
        parameters={"mode": "quick"},
        outputs={"result": f"file://{tmp_path / 'result'}/"},
    )
    assert cli("run", spec, "--local").returncode == 0
    done = cli("runs", "list", "--cost", "--env", "priced", "--project", project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "trainstack:costs.vcpuHour: a rate cannot be negative" in done.stderr
