"""Under `faultTolerance.unconditional` (restartPolicy OnFailure) a replica that has finished
takes its restarts out of the count.

KubeDL v0.5.0's `pastBackoffLimit` sums the containers' `restartCount`s of the pods whose phase is
Running only (pkg/job_controller/job.go:568-572: `if po.Status.Phase != v1.PodRunning {
continue }`), against `backoffLimit` (job.go:584-587). A pod whose command exited 0 is Succeeded,
so the restarts it had stop counting. Kubernetes' Job controller does the same for a custom run
(pkg/controller/job/job_controller.go, `pastBackoffLimitOnFailure`: Running or Pending pods
only). Before, the local runner counted every restart of the run, a finished replica's too, and
failed a run the cluster lets go on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local.helpers import launch
from trainstack.local.supervisor import Policy, Supervisor
from trainstack.registry.model import RunStatus

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")

# Exits 1 on its first attempt, then 0 on its second.
_A = "if [ ! -f a1 ]; then touch a1; exit 1; fi; echo $$ > a.pid"
# Waits until a's second attempt has exited and been reaped by the runner (so the runner has
# seen it finish), then fails once and succeeds on its second attempt.
_B = (
    "while [ ! -s a.pid ] || kill -0 $(cat a.pid) 2>/dev/null; do sleep 0.05; done; "
    "if [ ! -f b1 ]; then touch b1; exit 1; fi"
)


@pytest.mark.slow
def test_a_finished_replica_takes_its_restarts_out_of_the_count(tmp_path: Path) -> None:
    # backoffLimit 2 under OnFailure: one restart at a time may run (jobplan.restart_budget)
    policy = Policy(max_restarts=1, unconditional=True, grace_seconds=1)
    a = launch(tmp_path, "worker", 0, _A)
    b = launch(tmp_path, "worker", 1, _B)
    out = Supervisor([a, b], policy).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 2


@pytest.mark.slow
def test_restarts_of_running_replicas_still_add_up(tmp_path: Path) -> None:
    policy = Policy(max_restarts=1, unconditional=True, grace_seconds=1)
    # b fails twice while running: the second restart reaches backoffLimit and fails the run.
    a = launch(tmp_path, "worker", 0, "if [ ! -f a1 ]; then touch a1; exit 1; fi; sleep 30")
    b = launch(
        tmp_path,
        "worker",
        1,
        "while [ ! -f a1 ]; do sleep 0.05; done; exit 1",
    )
    out = Supervisor([a, b], policy).run()
    assert out.status is RunStatus.FAILED
    assert "no restarts left" in out.reason
