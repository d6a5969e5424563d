"""A pod deleted through the API (a preemption, a node drain, `kubectl delete`, a `--preempt`
drill) is judged as the platform's Kubernetes judges it.

Since Kubernetes 1.27 the kubelet gives a deleted pod a terminal phase from its containers' exit
(Failed, or Succeeded when they all exited 0) before it is removed (Kubernetes docs, "Pod
Lifecycle", Pod phase; kubernetes/kubernetes#115331); the platform requires 1.30
(trainstack.platformnames.MIN_KUBERNETES_MINOR). KubeDL v0.5.0 then judges that pod like any
exit (pkg/job_controller/pod.go:389-398): under ExitCode a retryable code is failed over
(failover.go:43-53), otherwise the Failed pod fails the job (e.g. controllers/pytorch/
status.go:109-137). A custom run's batch/v1 Job counts a deleted pod as failed at once without a
podFailurePolicy (pkg/controller/job/job_controller.go, isPodFailed: "Count deleted Pods as
failures"), with `backoffLimit: 0` without faultTolerance; with the ExitCode podFailurePolicy it
waits for the terminal phase and judges the exit code.

Before, the local runner recreated every deleted pod uncounted, under any policy, so a run
without faultTolerance survived a preemption locally that fails it on the cluster.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.local.helpers import launch, wait_for
from trainstack.kubedl import DeletedPod, JobType, job_kind
from trainstack.kubedl.restart import (
    EXIT_CODE,
    NEVER,
    ON_FAILURE,
    deleted_pod_rule,
)
from trainstack.local.supervisor import Outcome, Policy, Supervisor
from trainstack.platformnames import MIN_KUBERNETES_MINOR
from trainstack.registry.model import RunStatus

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")

# First attempt: mark that it started and wait (SIGTERM ends it: 143); later attempts: succeed.
ONCE = 'n=$(cat tries 2>/dev/null || echo 0); echo $((n+1)) > tries; [ "$n" -ge 1 ] || sleep 60'
# The same, but a first attempt that catches SIGTERM and exits 0, as a checkpointing job may.
ONCE_CLEAN = (
    'n=$(cat tries 2>/dev/null || echo 0); echo $((n+1)) > tries; [ "$n" -ge 1 ] && exit 0; '
    "trap 'exit 0' TERM; sleep 60 & wait"
)


def _drive(tmp_path: Path, policy: Policy, command: str = ONCE, *, peer: bool = False) -> Outcome:
    launches = [launch(tmp_path, "worker", 0, command)]
    if peer:  # a replica that outlives the deletion, so the job has not ended
        launches.append(launch(tmp_path, "worker", 1, "while [ ! -f tries2 ]; do sleep 0.05; done"))
    sup = Supervisor(launches, policy)
    out: list[Outcome] = []
    thread = threading.Thread(target=lambda: out.append(sup.run()), daemon=True)
    thread.start()
    wait_for("the first attempt", lambda: (tmp_path / "tries").exists())
    sup.request_delete("worker-0", reason="preempted")
    if peer:
        wait_for("the second attempt", lambda: (tmp_path / "tries").read_text() == "2\n")
        (tmp_path / "tries2").touch()
    thread.join(timeout=60)
    assert out, "the supervisor did not end"
    return out[0]


def _policy(rule: DeletedPod, **kw: object) -> Policy:
    return Policy(grace_seconds=1, deleted_pods={"worker": rule}, **kw)  # type: ignore[arg-type]


def test_the_platforms_kubernetes_makes_kubedl_judge_a_deleted_pod() -> None:
    assert MIN_KUBERNETES_MINOR >= 27
    kind = job_kind(JobType.PYTORCH)
    for policy in (NEVER, ON_FAILURE, EXIT_CODE):
        assert deleted_pod_rule(kind, policy, kubernetes_minor=MIN_KUBERNETES_MINOR) is (
            DeletedPod.EXIT_THEN_RECREATED
        )
        # before 1.27 the pod was only gone, and recreated uncounted (pod.go:274-281)
        assert deleted_pod_rule(kind, policy, kubernetes_minor=26) is DeletedPod.RECREATED
    custom = job_kind(JobType.CUSTOM)
    rules = {p: deleted_pod_rule(custom, p, kubernetes_minor=30) for p in (NEVER, ON_FAILURE)}
    assert rules == {NEVER: DeletedPod.FAILED, ON_FAILURE: DeletedPod.FAILED}
    assert deleted_pod_rule(custom, EXIT_CODE, kubernetes_minor=30) is DeletedPod.EXIT


def test_a_local_plan_follows_the_platforms_kubernetes(tmp_path: Path) -> None:
    import dataclasses

    from tests.render.conftest import SPECS
    from trainstack.local.jobplan import deleted_pods
    from trainstack.spec import load_run
    from trainstack.spec.model import FaultTolerance

    run = load_run(SPECS / "pytorch.run.yaml")
    assert set(deleted_pods(run).values()) == {DeletedPod.EXIT_THEN_RECREATED}
    custom = load_run(SPECS / "custom.run.yaml")
    exit_code = dataclasses.replace(custom, fault_tolerance=FaultTolerance(max_restarts=2))
    assert deleted_pods(exit_code) == {"worker": DeletedPod.EXIT}
    assert deleted_pods(dataclasses.replace(custom, fault_tolerance=None)) == {
        "worker": DeletedPod.FAILED
    }


@pytest.mark.slow
def test_a_deleted_pod_fails_a_kubedl_job_without_fault_tolerance(tmp_path: Path) -> None:
    out = _drive(tmp_path, _policy(DeletedPod.EXIT_THEN_RECREATED))
    assert out.status is RunStatus.FAILED
    assert "worker-0's pod was deleted (preempted)" in out.reason
    assert "exit code 143 (SIGTERM)" in out.reason
    assert (tmp_path / "tries").read_text() == "1\n"


@pytest.mark.slow
def test_a_deleted_pod_fails_a_kubedl_job_under_unconditional(tmp_path: Path) -> None:
    policy = _policy(DeletedPod.EXIT_THEN_RECREATED, max_restarts=2, unconditional=True)
    out = _drive(tmp_path, policy)
    assert out.status is RunStatus.FAILED
    assert "only restartPolicy ExitCode fails it over" in out.reason


@pytest.mark.slow
def test_a_deleted_pod_is_failed_over_and_counted_under_exit_code(tmp_path: Path) -> None:
    out = _drive(tmp_path, _policy(DeletedPod.EXIT_THEN_RECREATED, max_restarts=2))
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    assert (tmp_path / "tries").read_text() == "2\n"


@pytest.mark.slow
def test_a_deleted_pod_that_exits_0_is_recreated_uncounted_while_the_job_goes_on(
    tmp_path: Path,
) -> None:
    # Succeeded, then removed: KubeDL creates the missing pod again (pod.go:274-281).
    out = _drive(tmp_path, _policy(DeletedPod.EXIT_THEN_RECREATED), ONCE_CLEAN, peer=True)
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 0
    assert (tmp_path / "tries").read_text() == "2\n"


@pytest.mark.slow
def test_a_custom_runs_deleted_pod_is_a_failed_pod(tmp_path: Path) -> None:
    # no faultTolerance: backoffLimit 0, and the deleted pod is failed whatever it exits with
    out = _drive(tmp_path, _policy(DeletedPod.FAILED), ONCE_CLEAN)
    assert out.status is RunStatus.FAILED
    assert "the Job controller counts as failed" in out.reason
    (tmp_path / "u").mkdir()
    out = _drive(tmp_path / "u", _policy(DeletedPod.FAILED, max_restarts=2, unconditional=True))
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1


@pytest.mark.slow
def test_the_old_rule_still_recreates_uncounted(tmp_path: Path) -> None:
    out = _drive(tmp_path, _policy(DeletedPod.RECREATED))
    assert out.status is RunStatus.SUCCEEDED
    assert out.restarts == 0
