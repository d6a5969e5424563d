"""What a run cost: resource-time (requested × wall time per replica) for every
local run, and money where its environment sets `trainstack:costs`. Before this `runs list`
had no --cost and nothing recorded resource-time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _priced_run(tmp_path: Path, cli: Cli, name: str) -> None:
    spec = write_run(
        tmp_path / name,
        "probe",
        name,
        {"tags": {"env": "priced"}},
        parameters={"mode": "quick", "seconds": 0.3},
        outputs={"result": f"file://{tmp_path / name / 'result'}/"},
        resources={"worker": {"replicas": 1, "cpu": 2}},
    )
    assert cli("run", spec, "--local").returncode == 0


@pytest.mark.slow
def test_runs_compare_shows_each_runs_cost_and_idle_share(tmp_path: Path, cli: Cli) -> None:
    """`runs compare` shows cost where `runs show` does (it showed none)."""
    project = _project(tmp_path, {"currency": "CNY", "vcpuHour": 3600.0})
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        _priced_run(tmp_path, cli, name)
    done = cli("runs", "compare", "first", "second", "--project", project)
    assert done.returncode == 0, done.output
    rows = {line.split()[0]: line.split()[1:] for line in done.out.splitlines() if line.strip()}
    assert rows["cost"][0] == "CNY" and float(rows["cost"][1]) > 0
    assert rows["cost"][2] == "CNY" and float(rows["cost"][3]) > 0
    assert rows["idle"] == ["0%", "0%"]
    assert "vCPU-h" in done.out.split("resource-time", 1)[1].splitlines()[0]
    # at another environment's rates (none set there): resource-time, no price
    done = cli("runs", "compare", "first", "second", "--env", "free", "--project", project)
    assert done.returncode == 0, done.output
    assert next(x for x in done.out.splitlines() if x.startswith("cost")).split()[1:] == [
        "no",
        "rate",
        "no",
        "rate",
    ]


@pytest.mark.slow
def test_the_html_report_shows_the_cost(tmp_path: Path, cli: Cli) -> None:
    project = _project(tmp_path, {"currency": "CNY", "vcpuHour": 3600.0})
    (tmp_path / "one").mkdir()
    _priced_run(tmp_path, cli, "one")
    page = tmp_path / "report.html"
    done = cli("report", "one", "-o", page, "--project", project)
    assert done.returncode == 0, done.output
    html = page.read_text()
    assert "<th>cost</th>" in html or ">cost<" in html, html[:2000]
    assert "CNY " in html and "at priced&#39;s rates" in html and "idle 0%" in html


@pytest.mark.slow
def test_sweeps_show_shows_each_trials_cost_and_the_total(tmp_path: Path, cli: Cli) -> None:
    from tests.sweep.helpers import hold_project

    project = _project(tmp_path, {"currency": "CNY", "vcpuHour": 3600.0})
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [0.1, 0.2]},
            "objective": {"metric": "curve/loss", "goal": "minimize"},
        },
    )
    base = spec.parent.parent / "runs" / "base.yaml"
    doc = yaml.safe_load(base.read_text())
    doc["metadata"]["tags"] = {"env": "priced"}
    base.write_text(yaml.safe_dump(doc))
    done = cli("sweep", spec, "--local", "--no-install", timeout=300)
    assert done.returncode == 0, done.output
    shown = cli("sweeps", "show", "hold-sweep", "--project", project)
    assert shown.returncode == 0, shown.output
    lines = shown.out.splitlines()
    header = next(x for x in lines if x.startswith("TRIAL "))
    assert header.split() == ["TRIAL", "STATE", "OBJECTIVE", "PARAMETERS", "RUN", "COST", "IDLE"]
    trials = lines[lines.index(header) + 1 : lines.index(header) + 3]
    assert all(row[header.index("COST") :].startswith("CNY ") for row in trials), trials
    assert shown.out.count("CNY ") >= 3  # each trial's, and the total
    (total,) = [x for x in shown.out.splitlines() if x.startswith("cost: ")]
    assert total.startswith("cost: CNY ") and total.endswith("(2 of 2 runs priced)")
    data = json.loads(cli("sweeps", "show", "hold-sweep", "--json", "--project", project).out)
    assert all(t["cost"]["cost"].startswith("CNY ") for t in data["trials"])
    assert data["cost"].startswith("CNY ")
