"""The supervisor on its own: real `sh -c` processes, real signals, KubeDL restart semantics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.local.helpers import FIXTURES, REPO, launch, pid_alive, wait_for
from trainstack.local.exitcodes import is_retryable, normalize
from trainstack.local.procgroup import Replica, tagged_pids
from trainstack.local.supervisor import Outcome, Policy, Supervisor
from trainstack.registry.model import ReplicaExit, RunStatus

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")

STEPPER = f'"$PYTHON" {FIXTURES / "stepper.py"}'


def _run_in_thread(sup: Supervisor) -> tuple[threading.Thread, list[Outcome]]:
    result: list[Outcome] = []
    thread = threading.Thread(target=lambda: result.append(sup.run()), daemon=True)
    thread.start()
    return thread, result


def test_exit_codes_follow_kubedl() -> None:
    assert normalize(-9) == 137 and normalize(-15) == 143 and normalize(3) == 3
    codes = (0, 1, 2, 130, 137, 138, 139, 143)
    assert [c for c in codes if is_retryable(c)] == [130, 137, 138, 143]
    assert is_retryable(1, unconditional=True) and not is_retryable(0, unconditional=True)


@pytest.mark.slow
def test_exit_code_1_fails_the_job_without_retry(tmp_path: Path) -> None:
    sup = Supervisor(
        [launch(tmp_path, "worker", 0, "echo try >> tries; echo boom; exit 1")],
        Policy(max_restarts=3),
    )
    out = sup.run()
    assert out.status is RunStatus.FAILED
    assert out.restarts == 0
    assert out.exits == (ReplicaExit("worker", 0, 1),)
    assert "worker-0 exited with exit code 1 (not retried)" in out.reason
    assert (tmp_path / "tries").read_text() == "try\n"
    assert (tmp_path / "logs" / "worker-0.log").read_text() == "boom\n"


@pytest.mark.slow
def test_all_replicas_exit_zero_is_success(tmp_path: Path) -> None:
    launches = [launch(tmp_path, "master", 0, "exit 0")] + [
        launch(tmp_path, "worker", i, "echo hello from $ROLE_INDEX", ROLE_INDEX=str(i))
        for i in range(2)
    ]
    out = Supervisor(launches, Policy()).run()
    assert out.status is RunStatus.SUCCEEDED
    assert [e.exit_code for e in out.exits] == [0, 0, 0]
    assert (tmp_path / "logs" / "worker-1.log").read_text() == "hello from 1\n"


@pytest.mark.slow
def test_sigkilled_replica_is_restarted_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    state = tmp_path / "state"
    sup = Supervisor(
        [launch(tmp_path, "worker", 0, f"exec {STEPPER} {state} 8 0.05 3")],
        Policy(max_restarts=2),
    )
    thread, result = _run_in_thread(sup)
    # Event-driven: the first attempt stops after checkpoint 3 and says so; it is killed there,
    # never mid-step and never after it has already finished (which a timed wait could race).
    wait_for("the third checkpoint", lambda: (state / "held").exists())
    os.kill(int((state / "pid").read_text()), signal.SIGKILL)
    thread.join(120)
    out = result[0]
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    starts = [int(s) for s in (state / "starts").read_text().split()]
    assert starts == [0, 3]  # the second attempt resumed from the checkpoint, not from 0
    done = [int(s) for s in (state / "done-steps").read_text().split()]
    assert done == list(range(1, 9))  # every step exactly once
    log = (tmp_path / "logs" / "worker-0.log").read_text()
    assert "restart 1 of 2 after: worker-0 exited with exit code 137 (SIGKILL)" in log
    assert f"resumed from step {starts[1]}" in log


@pytest.mark.slow
def test_only_the_failed_replica_is_recreated(tmp_path: Path) -> None:
    # KubeDL's failover deletes the failed pod alone; its peers keep running (and are not
    # started again).
    cmd = (
        'echo x >> "$ROLE.starts"; if [ ! -e killed ]; then touch killed; kill -9 $$; fi; sleep 0.3'
    )
    # The master keeps running until the worker has been recreated (an event, not a duration):
    # its one start then shows it was not started again.
    master = (
        "echo x >> master.starts; "
        'until [ "$(cat worker.starts 2>/dev/null | wc -l)" -ge 2 ]; do sleep 0.02; done'
    )
    launches = [
        launch(tmp_path, "master", 0, master, ROLE="master"),
        launch(tmp_path, "worker", 0, cmd, ROLE="worker"),
    ]
    out = Supervisor(launches, Policy(max_restarts=1)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    assert (tmp_path / "master.starts").read_text() == "x\n"
    assert (tmp_path / "worker.starts").read_text() == "x\nx\n"


@pytest.mark.slow
def test_a_peer_that_then_fails_permanently_fails_the_job(tmp_path: Path) -> None:
    # worker-0 is SIGKILLed and recreated; the master, whose collective lost a rank, exits 1:
    # on a cluster that fails the job, so it does here, though restarts remain.
    worker = (
        "echo x >> worker.starts; if [ ! -e killed ]; then touch killed; kill -9 $$; fi; sleep 30"
    )
    master = "while [ ! -e killed ]; do sleep 0.02; done; echo lost a peer; exit 1"
    launches = [launch(tmp_path, "master", 0, master), launch(tmp_path, "worker", 0, worker)]
    out = Supervisor(launches, Policy(max_restarts=3, grace_seconds=2)).run()
    assert out.status is RunStatus.FAILED
    assert "master-0 exited with exit code 1" in out.reason
    assert {e.key: e.exit_code for e in out.exits}["master-0"] == 1
    # The master ran once: a peer's failure is not a reason to start it again.
    assert (tmp_path / "logs" / "master-0.log").read_text().count("lost a peer") == 1


@pytest.mark.slow
def test_independent_workers_restart_alone(tmp_path: Path) -> None:
    cmd = 'echo x >> "$ROLE.starts"; if [ ! -e killed ]; then touch killed; exit 143; fi'
    w0 = (
        "echo x >> w0.starts; "
        'until [ "$(cat w1.starts 2>/dev/null | wc -l)" -ge 2 ]; do sleep 0.02; done'
    )
    launches = [
        launch(tmp_path, "worker", 0, w0, ROLE="w0"),
        launch(tmp_path, "worker", 1, cmd, ROLE="w1"),
    ]
    out = Supervisor(launches, Policy(max_restarts=1)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert (tmp_path / "w0.starts").read_text() == "x\n"
    assert (tmp_path / "w1.starts").read_text() == "x\nx\n"


@pytest.mark.slow
def test_recreating_a_replica_kills_what_left_its_process_group(tmp_path: Path) -> None:
    # A replica whose child runs in a session of its own (as torchrun's workers do): when the
    # replica is recreated, that child is gone before the new attempt starts, as everything in
    # a deleted pod is. The second attempt fails (exit 3, not retried) if it finds it alive.
    first = (
        "touch killed; setsid sh -c 'echo $$ > orphan; exec sleep 60' & "
        "while [ ! -s orphan ]; do sleep 0.02; done; kill -9 $$"
    )
    second = (
        "pid=$(cat orphan); "
        "if [ -d /proc/$pid ] && ! grep -q '^State:.*Z' /proc/$pid/status; then exit 3; fi"
    )
    cmd = f"if [ ! -e killed ]; then {first}; else {second}; fi"
    out = Supervisor([launch(tmp_path, "worker", 0, cmd)], Policy(max_restarts=1)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1


@pytest.mark.slow
def test_retryable_exit_without_restarts_left_fails(tmp_path: Path) -> None:
    out = Supervisor(
        [launch(tmp_path, "worker", 0, "echo x >> tries; exit 138")], Policy(max_restarts=2)
    ).run()
    assert out.status is RunStatus.FAILED
    assert out.restarts == 2
    assert "no restarts left (maxRestarts: 2)" in out.reason
    assert (tmp_path / "tries").read_text() == "x\nx\nx\n"


@pytest.mark.slow
def test_unconditional_restarts_retry_any_failure(tmp_path: Path) -> None:
    cmd = "echo x >> tries; [ $(wc -l < tries) -ge 2 ]"
    out = Supervisor(
        [launch(tmp_path, "worker", 0, cmd)], Policy(max_restarts=1, unconditional=True)
    ).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1


@pytest.mark.slow
def test_timeout_stops_the_job_and_fails_it(tmp_path: Path) -> None:
    out = Supervisor(
        [launch(tmp_path, "worker", 0, "sleep 300")], Policy(timeout_seconds=0.5, grace_seconds=5)
    ).run()
    assert out.status is RunStatus.FAILED
    assert out.reason.startswith("timed out after 0.5s")
    assert out.exits == (ReplicaExit("worker", 0, 143, stopped=True),)


@pytest.mark.slow
def test_the_success_rule_decides_and_the_rest_are_stopped_not_failed(tmp_path: Path) -> None:
    # XGBoost's rule: the master alone. A worker still running is stopped, recorded as stopped.
    launches = [launch(tmp_path, "master", 0, "true"), launch(tmp_path, "worker", 0, "sleep 300")]
    out = Supervisor(launches, Policy(success=(frozenset({"master-0"}),))).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.exits == (ReplicaExit("master", 0, 0), ReplicaExit("worker", 0, 143, stopped=True))


@pytest.mark.slow
def test_any_one_success_set_is_enough(tmp_path: Path) -> None:
    # ElasticBatch: the AIMaster, or every worker. Here the workers finish first.
    launches = [
        launch(tmp_path, "aimaster", 0, "sleep 300"),
        launch(tmp_path, "worker", 0, "true"),
        launch(tmp_path, "worker", 1, "true"),
    ]
    rules = (frozenset({"aimaster-0"}), frozenset({"worker-0", "worker-1"}))
    out = Supervisor(launches, Policy(success=rules)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert {e.key: e.stopped for e in out.exits} == {
        "aimaster-0": True,
        "worker-0": False,
        "worker-1": False,
    }


@pytest.mark.slow
def test_without_its_success_set_a_job_waits_for_it(tmp_path: Path) -> None:
    # TF without a chief: worker-0 decides. worker-1 exiting 0 first does not end the job.
    # worker-0 finishes only once worker-1 has exited 0 and been reaped (an event, not a
    # duration): its pid is gone once the supervisor has seen the exit.
    launches = [
        launch(
            tmp_path,
            "worker",
            0,
            'until [ -s w1 ] && ! kill -0 "$(cat w1)" 2>/dev/null; do sleep 0.02; '
            "done; echo done > w0",
        ),
        launch(tmp_path, "worker", 1, "echo $$ > w1.tmp && mv w1.tmp w1"),
    ]
    out = Supervisor(launches, Policy(success=(frozenset({"worker-0"}),))).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert (tmp_path / "w0").read_text() == "done\n"


class _Starts:
    """An observer that records the order in which replicas start."""

    def __init__(self) -> None:
        self.order: list[str] = []

    def started(self, replica: Replica) -> None:
        self.order.append(replica.launch.key)

    def exited(self, replica: Replica, exit_code: int) -> None:
        pass

    def stopped(self, replica: Replica, exit_code: int) -> None:
        pass

    def restarting(self, restarts: int, reason: str) -> None:
        pass


@pytest.mark.slow
def test_a_role_starts_after_its_upstream_role(tmp_path: Path) -> None:
    # PyTorch workers start once the master runs, though listed first here.
    launches = [
        launch(tmp_path, "worker", 0, "true"),
        launch(tmp_path, "worker", 1, "true"),
        launch(tmp_path, "master", 0, "sleep 0.2"),
    ]
    starts = _Starts()
    out = Supervisor(launches, Policy(start_after={"worker": ("master",)}), starts).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert starts.order == ["master-0", "worker-0", "worker-1"]


@pytest.mark.slow
def test_stop_request_leaves_no_process_behind(tmp_path: Path) -> None:
    # Each replica starts a background child, a child that ignores SIGTERM, and one that leaves
    # the process group with setsid.
    cmd = textwrap.dedent("""
        sleep 300 & echo $! >> pids
        sh -c 'trap "" TERM; echo $$ >> pids; sleep 300 & wait' &
        setsid sh -c 'echo $$ >> pids; sleep 300' &
        echo $$ >> pids
        wait
    """)
    launches = [launch(tmp_path, "worker", i, cmd) for i in range(2)]
    sup = Supervisor(launches, Policy(grace_seconds=1))
    thread, result = _run_in_thread(sup)
    pids_file = tmp_path / "pids"
    wait_for(
        "every process to start",
        lambda: pids_file.exists() and len(pids_file.read_text().split()) == 8,
    )
    assert tagged_pids(sup.tag)  # the sweep would find them
    sup.request_stop()
    thread.join(60)
    assert result[0].status is RunStatus.CANCELLED
    pids = [int(p) for p in pids_file.read_text().split()]
    assert [p for p in pids if pid_alive(p)] == []
    assert tagged_pids(sup.tag) == []


@pytest.mark.slow
def test_replicas_die_with_a_killed_runner(tmp_path: Path) -> None:
    driver = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from tests.local.helpers import launch
        from trainstack.local.deadman import DeadmanSwitch
        from trainstack.local.supervisor import Policy, Supervisor
        tmp = Path({str(tmp_path)!r})
        cmd = 'sleep 300 & echo $! >> pids; echo $$ >> pids; wait'
        sup = Supervisor([launch(tmp, "worker", 0, cmd)], Policy(grace_seconds=1),
                         deadman=DeadmanSwitch("tag-x", 1.0, None, None), tag="tag-x")
        sup.run()
    """)
    runner = subprocess.Popen([sys.executable, "-c", driver], cwd=REPO)
    pids_file = tmp_path / "pids"
    wait_for(
        "the replica to start",
        lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2,
    )
    runner.kill()
    runner.wait()
    pids = [int(p) for p in pids_file.read_text().split()]
    wait_for("the sidecar to stop the orphans", lambda: not any(pid_alive(p) for p in pids))
    assert tagged_pids("tag-x") == []
