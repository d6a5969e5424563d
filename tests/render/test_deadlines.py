"""A run's `timeout` ends it on a cluster as it ends it locally.

KubeDL v0.5.0 fails a job past `activeDeadlineSeconds` only once its `Status.StartTime` is set
(pkg/job_controller/job.go, pastActiveDeadline), and the MPI controller never sets it
(controllers/mpi/job.go, UpdateJobStatus): a hung MPIJob ran forever on a cluster and was
stopped locally at `timeout`. The launcher now enforces the deadline itself, with an exit code
KubeDL's ExitCode policy never retries. Before the fix the launcher's command had no deadline.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.render.conftest import SPECS
from trainstack.contract import launch_command
from trainstack.kubedl import RETRYABLE_EXIT_CODES, DeadlineClock, JobType, job_kind
from trainstack.render import render_run
from trainstack.spec import load_run
from trainstack.spec.model import Run


def _mpi(**changes: Any) -> Run:
    return dataclasses.replace(load_run(SPECS / "mpi.run.yaml"), **changes)


def _container(doc: dict[str, Any], replica: str) -> dict[str, Any]:
    spec = doc["spec"]["mpiReplicaSpecs"][replica]["template"]["spec"]
    return dict(spec["containers"][0])


def test_the_kind_record_says_when_each_operator_starts_the_clock() -> None:
    # pkg/job_controller/job.go pastActiveDeadline needs Status.StartTime; who sets it:
    assert job_kind(JobType.MPI).deadline_clock is DeadlineClock.NEVER  # controllers/mpi/job.go
    assert job_kind(JobType.MPI).deadline_role == "launcher"
    # XGBoost: once every replica of a role is active (controllers/xgboost/job.go)
    assert job_kind(JobType.XGBOOST).deadline_clock is DeadlineClock.ROLE_ACTIVE
    for jt in (JobType.TENSORFLOW, JobType.PYTORCH, JobType.ELASTICBATCH, JobType.CUSTOM):
        assert job_kind(jt).deadline_clock is DeadlineClock.ACKNOWLEDGED, jt
        assert job_kind(jt).deadline_role is None


def test_an_mpi_launcher_carries_the_runs_deadline() -> None:
    job = render_run(_mpi(timeout_seconds=3600))[-1]
    launcher = " ".join(_container(job, "Launcher")["command"])
    assert "timeout 3600 " in launcher
    # workers only host ranks; the launcher's deadline ends the job
    assert "timeout" not in " ".join(_container(job, "Worker")["command"])
    # without a timeout nothing is wrapped
    plain = render_run(_mpi(timeout_seconds=None))[-1]
    assert "timeout" not in " ".join(_container(plain, "Launcher")["command"])


def test_other_kinds_leave_the_deadline_to_the_operator() -> None:
    run = load_run(SPECS / "pytorch.run.yaml")
    for role in run.resources:
        script = launch_command(dataclasses.replace(run, timeout_seconds=60), role)[2]
        assert "timeout" not in script


def test_a_hung_launcher_stops_at_the_deadline_with_a_code_kubedl_never_retries(
    tmp_path: Path,
) -> None:
    comp = dataclasses.replace(_mpi().component, command="sleep 60")
    run = _mpi(timeout_seconds=1, component=comp)
    argv = launch_command(run, "launcher", install_requirements=False)
    # The same argv runs in the pod and locally (trainstack.local.jobplan).
    done = subprocess.run(
        argv, env={"PATH": "/usr/bin:/bin", "PAI_WORKING_DIR": str(tmp_path)}, timeout=50
    )
    assert done.returncode == 124
    assert done.returncode not in RETRYABLE_EXIT_CODES  # pkg/util/train/train_util.go


def test_a_launcher_that_ends_in_time_keeps_its_own_exit_code(tmp_path: Path) -> None:
    comp = dataclasses.replace(_mpi().component, command='exit "$1"')
    run = _mpi(timeout_seconds=600, component=comp)
    argv = launch_command(run, "launcher", install_requirements=False)
    argv = [*argv[:4], "7"]
    done = subprocess.run(
        argv, env={"PATH": "/usr/bin:/bin", "PAI_WORKING_DIR": str(tmp_path)}, timeout=50
    )
    assert done.returncode == 7


@pytest.mark.parametrize("path", ["", "/nonexistent"])
def test_an_image_without_timeout_fails_at_once_and_says_why(tmp_path: Path, path: str) -> None:
    comp = dataclasses.replace(_mpi().component, command="sleep 60")
    run = _mpi(timeout_seconds=5, component=comp)
    argv = launch_command(run, "launcher", install_requirements=False)
    sh = subprocess.run(["sh", "-c", "command -v sh"], capture_output=True, text=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sh").symlink_to(sh.stdout.strip())
    done = subprocess.run(
        ["/bin/sh", *argv[1:]],
        env={"PATH": str(bindir) + (":" + path if path else ""), "PAI_WORKING_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 127
    assert "timeout" in done.stderr and "MPIJob" in done.stderr
