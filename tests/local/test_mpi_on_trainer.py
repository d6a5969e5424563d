"""`run --local --env ENV` of an MPI run for an environment whose operator is Kubeflow Trainer:
the local runner's MPI mechanism (the launcher's mpirun starts every rank here, from the local
hostfile: no sshd), under the JobSet rules of the run's own TrainingRuntime
(trainstack.trainer.mpi, trainstack.local.trainerjob.mpi_policy): any replica's failure restarts
every replica, up to the run's own faultTolerance.maxRestarts (none without it), and the
launcher's success ends the set. Before, such a run was refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.local.helpers import launch
from tests.render.conftest import SPECS
from trainstack.local.jobplan import plan_job
from trainstack.local.sandbox import Layout
from trainstack.local.supervision import RestartScope
from trainstack.local.supervisor import Supervisor
from trainstack.registry.model import RunStatus
from trainstack.spec import load_run
from trainstack.spec.model import Run
from trainstack.trainer import Operator

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")


def _plan(tmp_path: Path, run: Run):  # type: ignore[no-untyped-def]
    return plan_job(
        run,
        Layout(tmp_path / "rd"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
        operator=Operator.TRAINER,
    )


def test_it_follows_the_jobset_of_its_own_runtime(tmp_path: Path) -> None:
    run = load_run(SPECS / "mpi.run.yaml")  # faultTolerance.maxRestarts 2
    plan = _plan(tmp_path, run)
    # the replicas keep their roles (the MPI mechanism), not the TrainJob's `node` ranks
    assert [f"{r.role}-{r.index}" for r in plan.launches] == ["launcher-0", "worker-0", "worker-1"]
    policy = plan.policy
    assert policy.scope is RestartScope.SET and policy.max_restarts == 2
    assert policy.success == (frozenset({"launcher-0"}),)
    assert dict(policy.start_after) == {"launcher": ("worker",)}
    assert not policy.final_roles  # on KubeDL the launcher's failure is final; here it restarts
    none = _plan(tmp_path, dataclasses.replace(run, fault_tolerance=None)).policy
    assert none.max_restarts == 0


@pytest.mark.slow
def test_a_failed_worker_restarts_every_replica_and_the_launchers_success_ends_the_set(
    tmp_path: Path,
) -> None:
    policy = _plan(tmp_path, load_run(SPECS / "mpi.run.yaml")).policy
    # worker-0 fails on the first attempt only; the launcher succeeds once worker-0 has come up
    # again (the second attempt); worker-1 only waits, as a worker does while mpirun runs ranks.
    worker0 = launch(
        tmp_path,
        "worker",
        0,
        # fails only once the others have started, so each is seen starting twice
        "echo x >> w0-starts; if [ ! -f failed ]; then touch failed; "
        "until [ -s w1-starts ] && [ -s l-starts ]; do sleep 0.02; done; exit 3; fi; "
        "touch second; exec sleep 1000",
    )
    worker1 = launch(tmp_path, "worker", 1, "echo x >> w1-starts; exec sleep 1000")
    launcher = launch(
        tmp_path,
        "launcher",
        0,
        "echo x >> l-starts; until [ -f second ]; do sleep 0.05; done; exit 0",
    )
    out = Supervisor([launcher, worker0, worker1], policy).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    # the whole set started twice, the waiting worker too
    for name in ("w0-starts", "w1-starts", "l-starts"):
        assert len((tmp_path / name).read_text().splitlines()) == 2, name
