"""A pod deleted through the API and a pod evicted by the kubelet are two different things to
KubeDL v0.5.0, and the local supervisor models them apart:

- deleted (drain, preemption, `kubectl delete`): on Kubernetes before 1.27 the pod is only gone,
  so the next reconcile creates it again (pkg/job_controller/pod.go:274-281), whatever the restart
  policy, and nothing counts it (a Policy naming no DeletedPod rule); from 1.27 the kubelet marks
  it Failed first and KubeDL judges it (tests/local/test_deleted_pods_by_version.py);
- evicted (node pressure): the pod stays, phase Failed, reason Evicted; only ExitCode fails it
  over (pkg/job_controller/failover.go:43-53, pkg/util/train/train_util.go:60-65), counted like
  any recreation; under Never or OnFailure it fails the job.

Before this the supervisor had neither: docs/local.md called both "a replica's SIGKILL".
Real processes, real signals.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.local.helpers import launch, wait_for
from trainstack.local.supervisor import Outcome, Policy, Supervisor
from trainstack.registry.model import RunStatus

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")

# First attempt: mark that it started and wait; later attempts: succeed.
ONCE = 'n=$(cat tries 2>/dev/null || echo 0); echo $((n+1)) > tries; [ "$n" -ge 1 ] || sleep 60'


def _run(sup: Supervisor) -> tuple[threading.Thread, list[Outcome]]:
    out: list[Outcome] = []
    thread = threading.Thread(target=lambda: out.append(sup.run()), daemon=True)
    thread.start()
    return thread, out


def _drive(tmp_path: Path, policy: Policy, *, evicted: bool) -> Outcome:
    sup = Supervisor([launch(tmp_path, "worker", 0, ONCE)], policy)
    thread, out = _run(sup)
    wait_for("the first attempt", lambda: (tmp_path / "tries").exists())
    sup.request_delete("worker-0", evicted=evicted)
    thread.join(timeout=60)
    assert out, "the supervisor did not end"
    return out[0]


@pytest.mark.slow
def test_before_kubernetes_1_27_a_deleted_pod_is_recreated_uncounted(tmp_path: Path) -> None:
    out = _drive(tmp_path, Policy(max_restarts=0, grace_seconds=1), evicted=False)
    assert out.status is RunStatus.SUCCEEDED
    assert out.restarts == 0
    assert (tmp_path / "tries").read_text() == "2\n"


@pytest.mark.slow
def test_an_evicted_pod_is_retried_under_exit_code_and_counted(tmp_path: Path) -> None:
    out = _drive(tmp_path, Policy(max_restarts=2, grace_seconds=1), evicted=True)
    assert out.status is RunStatus.SUCCEEDED
    assert out.restarts == 1


@pytest.mark.slow
def test_an_evicted_pod_fails_the_job_without_exit_code(tmp_path: Path) -> None:
    # no faultTolerance (Never)
    out = _drive(tmp_path, Policy(max_restarts=0, grace_seconds=1), evicted=True)
    assert out.status is RunStatus.FAILED
    assert "worker-0 was evicted" in out.reason
    # OnFailure: the kubelet restarts containers, not evicted pods; KubeDL fails none over
    (tmp_path / "u").mkdir()
    out = _drive(
        tmp_path / "u", Policy(max_restarts=3, unconditional=True, grace_seconds=1), evicted=True
    )
    assert out.status is RunStatus.FAILED
    assert "worker-0 was evicted" in out.reason
