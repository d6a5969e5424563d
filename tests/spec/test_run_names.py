"""A run's name is already its Kubernetes name: names that differ only in case or '_'/'-' would
otherwise become one job under two stacks, and the second deploy fail half-way with
AlreadyExists. Refused at validate, once, at the name's line, with what it would have become."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.clirunner import Cli
from tests.spec.rulekit import RUN, Kit, merged, write_yaml
from trainstack.k8snames import MAX_JOB_NAME, job_name
from trainstack.spec.check import validate
from trainstack.spec.model import Run
from trainstack.spec.scaffold import scaffold

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "becomes"),
    [
        ("Mnist_Baseline_01", "mnist-baseline-01"),
        ("TinyCNN_Run", "tinycnn-run"),
        ("mnist_baseline_01", "mnist-baseline-01"),
        ("MNIST-baseline-01", "mnist-baseline-01"),
        ("run-", job_name("run-")),
        ("01-run", job_name("01-run")),
        ("r" * (MAX_JOB_NAME + 1), job_name("r" * (MAX_JOB_NAME + 1))),
    ],
)
def test_a_run_name_that_is_not_its_kubernetes_name_is_refused(
    name: str, becomes: str, tmp_path: Path
) -> None:
    comp = ROOT / "components/mnist-ddp/component.yaml"
    spec = write_yaml(
        tmp_path / "run.yaml",
        merged(RUN, {"metadata": {"name": name}, "spec": {"component": str(comp)}}),
    )
    diags = validate([spec]).diagnostics
    assert [(d.path, d.code, d.line) for d in diags] == [("metadata.name", "run-name", 4)]
    assert diags[0].file.endswith("run.yaml")
    assert repr(becomes) in (diags[0].hint or "")


def test_names_that_are_already_kubernetes_names_pass(tmp_path: Path) -> None:
    for name in ("mnist-baseline-01", "r", "a" * MAX_JOB_NAME):
        loaded = Kit(tmp_path).run(merged(RUN, {"metadata": {"name": name}}))
        assert isinstance(loaded, Run), loaded
        assert job_name(loaded.name) == name


def test_the_cli_says_what_the_name_would_become(tmp_path: Path) -> None:
    comp = ROOT / "components/mnist-ddp/component.yaml"
    spec = write_yaml(
        tmp_path / "run.yaml",
        merged(RUN, {"metadata": {"name": "TinyCNN_Run"}, "spec": {"component": str(comp)}}),
    )
    done = Cli().invoke("validate", spec)
    assert done.code == 2, done.output
    assert "metadata.name" in done.output and "'tinycnn-run'" in done.output
    assert "Traceback" not in done.output


def test_a_sweep_name_leaves_room_for_its_trials(tmp_path: Path) -> None:
    sweep = ROOT / "components/mnist-ddp/sweeps/lr-optimizer.yaml"
    doc = yaml.safe_load(sweep.read_text())
    base = doc["spec"]["run"]
    if isinstance(base, str):
        doc["spec"]["run"] = str((sweep.parent / base).resolve())
    for name, ok in (("LR_Sweep", False), ("s" * (MAX_JOB_NAME - 6), True), ("s" * 42, False)):
        doc["metadata"]["name"] = name
        path = write_yaml(tmp_path / "sweep.yaml", doc)
        diags = validate([path]).diagnostics
        if ok:
            assert diags == [], diags
        else:
            assert [(d.path, d.code) for d in diags] == [("metadata.name", "run-name")], diags


@pytest.mark.parametrize(
    "component", ["mnist", "a" * 63, "1" + "a" * 62, "9lives", "a" + "-b" * 31]
)
def test_init_scaffolds_a_run_name_that_validates(component: str, tmp_path: Path) -> None:
    scaffold(component, parent=tmp_path)
    run = tmp_path / component / "runs" / "example.yaml"
    assert validate([run]).diagnostics == []
