"""An MPI launcher's failure is final, on a cluster and locally.

KubeDL v0.5.0 fails an MPIJob as soon as its launcher pod failed, whatever the restart policy:
`UpdateJobStatus` marks the job Failed when `launcherStatus.Failed > 0` and looks at no
`restart` flag there (controllers/mpi/job.go:103-124); only the worker branch has a
"restarting" case (job.go:140-150). Under `restartPolicy: ExitCode` a retryable launcher exit
(130, 137, 138, 143) also has the pod deleted for a failover (pkg/job_controller/pod.go:314-316,
348-350; failover.go:89-112) that never comes, since the finished job creates no pod again, and
the launcher's log goes with it. The launcher is rendered `Never` under ExitCode (the failed pod
stays, with its log) and a local run does not recreate it, as the ElasticBatch AIMaster already
was. Before, a retryable launcher exit was recreated locally and the run succeeded.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.local.helpers import launch
from tests.render.conftest import SPECS
from trainstack.kubedl import JobType, job_kind
from trainstack.local.jobplan import plan_job
from trainstack.local.sandbox import Layout
from trainstack.local.supervisor import Supervisor
from trainstack.registry.model import RunStatus
from trainstack.render import render_run
from trainstack.spec import load_run
from trainstack.spec.model import FaultTolerance, Run

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")


def _run(**ft: object) -> Run:
    run = load_run(SPECS / "mpi.run.yaml")
    return dataclasses.replace(run, fault_tolerance=FaultTolerance(**ft) if ft else None)  # type: ignore[arg-type]


def _policies(run: Run) -> dict[str, str]:
    job = render_run(run)[-1]
    return {k: v["restartPolicy"] for k, v in job["spec"]["mpiReplicaSpecs"].items()}


def test_the_kind_record_says_the_launcher_has_no_failover() -> None:
    kind = job_kind(JobType.MPI)
    assert not kind.role("launcher").failover
    assert kind.role("worker").failover


def test_the_launcher_is_rendered_never_under_exit_code() -> None:
    assert _policies(_run(max_restarts=3)) == {"Launcher": "Never", "Worker": "ExitCode"}
    # OnFailure restarts the launcher's container in place: its pod never fails, so neither
    # does the job; the restarts count against backoffLimit (pkg/job_controller/job.go:551-588).
    assert _policies(_run(max_restarts=3, unconditional=True)) == {
        "Launcher": "OnFailure",
        "Worker": "OnFailure",
    }
    assert _policies(_run()) == {"Launcher": "Never", "Worker": "Never"}


@pytest.mark.slow
def test_a_retryable_launcher_exit_fails_a_local_run(tmp_path: Path) -> None:
    plan = plan_job(
        _run(max_restarts=3),
        Layout(tmp_path / "rd"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
    )
    assert set(plan.policy.final_roles) == {"launcher"}
    for code in (130, 137, 138, 143):
        launcher = launch(
            tmp_path,
            "launcher",
            0,
            f"if [ ! -f once{code} ]; then touch once{code}; exit {code}; fi",
        )
        out = Supervisor([launcher], plan.policy).run()
        assert out.status is RunStatus.FAILED, code
        assert out.restarts == 0
        assert "launcher-0 exited with exit code" in out.reason
        assert "KubeDL v0.5.0 fails the MPIJob when its launcher fails" in out.reason
