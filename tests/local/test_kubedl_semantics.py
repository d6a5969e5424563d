"""What a local run takes from the job-kind model: success rules,
start order, restart counting, hostnames and the MPI hostfile. At 8f06a63 every replica had to
exit 0, everything started at once, restarts restarted the whole job, all replicas shared one
hostname and the MPI hostfile was `localhost slots=<workers>`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.local.helpers import write_run
from trainstack.contract.files import config_files
from trainstack.local.jobplan import plan_job, restart_budget, start_order, success_sets
from trainstack.local.sandbox import Layout
from trainstack.spec import load_run
from trainstack.spec.model import Run


def _run(
    tmp_path: Path, job_type: str, resources: dict[str, dict[str, int]], **spec: object
) -> Run:
    comp = tmp_path / job_type / "component.yaml"
    comp.parent.mkdir(parents=True, exist_ok=True)
    comp.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "trainstack.dev/v1",
                "kind": "Component",
                "metadata": {"name": f"{job_type}-probe", "version": "1.0.0"},
                "spec": {"jobType": job_type, "image": "python:3.11-slim", "command": "true"},
            }
        )
    )
    return load_run(write_run(tmp_path, comp, f"{job_type}-run", resources=resources, **spec))


@pytest.mark.parametrize(
    ("job_type", "resources", "expected"),
    [
        # TF: the chief alone when there is one, else worker 0.
        (
            "tensorflow",
            {"chief": {"replicas": 1}, "ps": {"replicas": 1}, "worker": {"replicas": 2}},
            [{"chief-0"}],
        ),
        ("tensorflow", {"ps": {"replicas": 1}, "worker": {"replicas": 2}}, [{"worker-0"}]),
        # XGBoost: the master alone.
        ("xgboost", {"master": {"replicas": 1}, "worker": {"replicas": 2}}, [{"master-0"}]),
        # PyTorch: the master and every worker.
        (
            "pytorch",
            {"master": {"replicas": 1}, "worker": {"replicas": 2}},
            [{"master-0", "worker-0", "worker-1"}],
        ),
        # ElasticBatch: the AIMaster, or every worker.
        (
            "elasticbatch",
            {"aimaster": {"replicas": 1}, "worker": {"replicas": 2}},
            [{"aimaster-0"}, {"worker-0", "worker-1"}],
        ),
        # MPI: the launcher (the workers only host ranks).
        ("mpi", {"launcher": {"replicas": 1}, "worker": {"replicas": 2}}, [{"launcher-0"}]),
    ],
)
def test_success_follows_the_kinds_rule(
    tmp_path: Path, job_type: str, resources: dict[str, dict[str, int]], expected: list[set[str]]
) -> None:
    assert [set(s) for s in success_sets(_run(tmp_path, job_type, resources))] == expected


@pytest.mark.parametrize(
    ("job_type", "resources", "expected"),
    [
        (
            "pytorch",
            {"master": {"replicas": 1}, "worker": {"replicas": 2}},
            {"worker": ("master",)},
        ),
        (
            "mpi",
            {"launcher": {"replicas": 1}, "worker": {"replicas": 2}},
            {"launcher": ("worker",)},
        ),
        (
            "xgboost",
            {"master": {"replicas": 1}, "worker": {"replicas": 1}},
            {"worker": ("master",)},
        ),
        (
            "tensorflow",
            {"chief": {"replicas": 1}, "ps": {"replicas": 1}, "worker": {"replicas": 1}},
            {"chief": ("ps",), "worker": ("ps",)},
        ),
        ("pytorch", {"master": {"replicas": 1}}, {}),
    ],
)
def test_start_order_follows_the_model(
    tmp_path: Path,
    job_type: str,
    resources: dict[str, dict[str, int]],
    expected: dict[str, tuple[str, ...]],
) -> None:
    run = _run(tmp_path, job_type, resources)
    assert start_order(run) == expected
    plan = plan_job(
        run, Layout(tmp_path / "rd"), run_id="r", venv=None, grace_seconds=1, available_gpus=()
    )
    assert dict(plan.policy.start_after) == expected


def test_restarts_are_counted_as_the_operator_counts_them(tmp_path: Path) -> None:
    res = {"master": {"replicas": 1}}
    # No faultTolerance: restartPolicy Never.
    assert restart_budget(_run(tmp_path, "pytorch", res))[0] == 0
    # ExitCode: one recreation per retryable exit, up to maxRestarts locally.
    assert restart_budget(_run(tmp_path, "pytorch", res, faultTolerance={"maxRestarts": 3}))[0] == 3
    # OnFailure: the restart that brings the count to backoffLimit fails the job.
    allowed, why = restart_budget(
        _run(tmp_path, "pytorch", res, faultTolerance={"maxRestarts": 3, "unconditional": True})
    )
    assert allowed == 2
    assert "restart count reaches 3" in why


def test_each_replica_sees_its_pod_name_as_hostname(tmp_path: Path) -> None:
    run = _run(tmp_path, "pytorch", {"master": {"replicas": 1}, "worker": {"replicas": 2}})
    plan = plan_job(
        run, Layout(tmp_path / "rd"), run_id="r", venv=None, grace_seconds=1, available_gpus=()
    )
    assert [launch.env["HOSTNAME"] for launch in plan.launches] == [
        "pytorch-run-master-0",
        "pytorch-run-worker-0",
        "pytorch-run-worker-1",
    ]


def test_a_custom_replica_sees_the_indexed_jobs_hostname(tmp_path: Path) -> None:
    """A custom run is a batch/v1 Job in Indexed completion mode, whose pods'
    hostname is `<job>-<index>` (Kubernetes, Job "Completion mode": "The Pod hostname is set to
    $(job-name)-$(index)"); locally it was `<job>-worker-<i>`."""
    run = _run(tmp_path, "custom", {"worker": {"replicas": 3}})
    plan = plan_job(
        run, Layout(tmp_path / "rd"), run_id="r", venv=None, grace_seconds=1, available_gpus=()
    )
    assert [launch.env["HOSTNAME"] for launch in plan.launches] == [
        "custom-run-0",
        "custom-run-1",
        "custom-run-2",
    ]


def test_the_local_mpi_hostfile_has_the_clusters_slots(tmp_path: Path) -> None:
    run = _run(tmp_path, "mpi", {"launcher": {"replicas": 1}, "worker": {"replicas": 2, "gpu": 2}})
    plan = plan_job(
        run,
        Layout(tmp_path / "rd"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=("0", "1", "2", "3"),
    )
    hostfile = plan.config["hostfile"]
    # KubeDL: the launcher first (it runs ranks too), then the workers, slotsPerWorker each
    # (one per GPU here): 3 hosts x 2 slots = 6 ranks for `mpirun` without -np.
    assert [line for line in hostfile.splitlines() if not line.startswith("#")] == [
        "localhost slots=6"
    ]
    assert (
        "#   mpi-run-launcher-0 slots=2\n#   mpi-run-worker-0 slots=2\n"
        "#   mpi-run-worker-1 slots=2\n" in hostfile
    )
    launcher = next(launch for launch in plan.launches if launch.role == "launcher")
    assert launcher.env["OMPI_MCA_orte_default_hostfile"].endswith("/input/config/hostfile")
    assert config_files(run, plan.topology)["hostfile"] == hostfile
