"""An ElasticBatch AIMaster's failure is final, on a cluster and locally.

KubeDL v0.5.0 fails an ElasticBatchJob when any AIMaster pod failed, whatever the restart
policy: controllers/elasticbatch/status.go:108-109 takes the "restarting" branch only for a
replica type that is not the AIMaster. Under `restartPolicy: ExitCode` the pod is still deleted
for a failover that never takes effect (pkg/job_controller/pod.go:314-349), and its log goes with
it. The AIMaster is now rendered `Never` under ExitCode (the failed pod stays, with its log) and
a local run does not recreate it. Before the fix a retryable AIMaster exit was recreated locally
and the run succeeded, while the cluster failed it.
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
from trainstack.local.supervisor import Policy, Supervisor
from trainstack.registry.model import RunStatus
from trainstack.render import render_run
from trainstack.spec import load_run
from trainstack.spec.model import FaultTolerance, Run

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")


def _run(**ft: object) -> Run:
    run = load_run(SPECS / "elasticbatch.run.yaml")
    return dataclasses.replace(run, fault_tolerance=FaultTolerance(**ft) if ft else None)  # type: ignore[arg-type]


def _policies(run: Run) -> dict[str, str]:
    job = render_run(run)[-1]
    return {k: v["restartPolicy"] for k, v in job["spec"]["elasticBatchReplicaSpecs"].items()}


def test_the_kind_record_says_the_aimaster_has_no_failover() -> None:
    kind = job_kind(JobType.ELASTICBATCH)
    assert not kind.role("aimaster").failover
    assert kind.role("worker").failover
    # the MPI launcher has none either (tests/local/test_mpi_launcher_exits.py)
    for jt in (JobType.PYTORCH, JobType.TENSORFLOW, JobType.XGBOOST):
        assert all(r.failover for r in job_kind(jt).roles), jt


def test_the_aimaster_is_rendered_never_under_exit_code() -> None:
    assert _policies(_run(max_restarts=3)) == {"Worker": "ExitCode", "AIMaster": "Never"}
    # OnFailure restarts the container in place: the pod never fails, so the job does not;
    # the restarts count against backoffLimit (pkg/job_controller/job.go, pastBackoffLimit).
    assert _policies(_run(max_restarts=3, unconditional=True)) == {
        "Worker": "OnFailure",
        "AIMaster": "OnFailure",
    }
    assert _policies(_run()) == {"Worker": "Never", "AIMaster": "Never"}


def test_a_local_plan_gives_the_aimaster_no_restarts(tmp_path: Path) -> None:
    plan = plan_job(
        _run(max_restarts=3),
        Layout(tmp_path / "rd"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
    )
    assert set(plan.policy.final_roles) == {"aimaster"}
    unconditional = plan_job(
        _run(max_restarts=3, unconditional=True),
        Layout(tmp_path / "rd2"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
    )
    assert not unconditional.policy.final_roles


@pytest.mark.slow
def test_a_sigkilled_aimaster_fails_the_job_while_a_worker_is_recreated(tmp_path: Path) -> None:
    worker = launch(
        tmp_path, "worker", 0, 'if [ ! -f w ]; then touch w; kill -9 $$; fi; echo "$$" > w2'
    )
    policy = Policy(max_restarts=3, final_roles={"aimaster": "why"})
    out = Supervisor([worker], policy).run()
    assert out.status is RunStatus.SUCCEEDED and out.restarts == 1
    aimaster = launch(tmp_path, "aimaster", 0, "kill -9 $$")
    out = Supervisor([aimaster], policy).run()
    assert out.status is RunStatus.FAILED
    assert out.restarts == 0
    assert "aimaster-0 exited with exit code 137 (SIGKILL)" in out.reason
    assert "why" in out.reason
