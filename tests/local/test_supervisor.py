"""The supervisor on its own: real `sh -c` processes, real signals, KubeDL restart semantics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from tests.local.helpers import FIXTURES, REPO, launch, pid_alive, wait_for
from trainstack.local.exitcodes import is_retryable, normalize
from trainstack.local.procgroup import tagged_pids
from trainstack.local.supervisor import Outcome, Policy, RestartScope, Supervisor
from trainstack.registry.model import ReplicaExit, RunStatus

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


def test_all_replicas_exit_zero_is_success(tmp_path: Path) -> None:
    launches = [launch(tmp_path, "master", 0, "exit 0")] + [
        launch(tmp_path, "worker", i, "echo hello from $ROLE_INDEX", ROLE_INDEX=str(i))
        for i in range(2)
    ]
    out = Supervisor(launches, Policy()).run()
    assert out.status is RunStatus.SUCCEEDED
    assert [e.exit_code for e in out.exits] == [0, 0, 0]
    assert (tmp_path / "logs" / "worker-1.log").read_text() == "hello from 1\n"


def test_sigkilled_replica_is_restarted_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    state = tmp_path / "state"
    sup = Supervisor(
        [launch(tmp_path, "worker", 0, f"exec {STEPPER} {state} 8 0.15")],
        Policy(max_restarts=2),
    )
    thread, result = _run_in_thread(sup)
    wait_for("three checkpoints", lambda: (state / "step").exists()
             and int((state / "step").read_text()) >= 3)
    os.kill(int((state / "pid").read_text()), signal.SIGKILL)
    thread.join(120)
    out = result[0]
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    starts = [int(s) for s in (state / "starts").read_text().split()]
    assert starts[0] == 0 and starts[1] >= 3  # the second attempt resumed, not restarted at 0
    done = [int(s) for s in (state / "done-steps").read_text().split()]
    assert done == list(range(1, 9))  # every step exactly once
    log = (tmp_path / "logs" / "worker-0.log").read_text()
    assert "restart 1 of 2 after: worker-0 exited with exit code 137 (SIGKILL)" in log
    assert f"resumed from step {starts[1]}" in log


def test_distributed_job_restarts_as_a_whole(tmp_path: Path) -> None:
    cmd = ('echo x >> "$ROLE.starts"; '
           "if [ ! -e killed ]; then touch killed; kill -9 $$; fi; sleep 0.3")
    launches = [launch(tmp_path, "master", 0, "echo x >> master.starts; sleep 1", ROLE="master"),
                launch(tmp_path, "worker", 0, cmd, ROLE="worker")]
    out = Supervisor(launches, Policy(max_restarts=1, scope=RestartScope.JOB)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1
    assert (tmp_path / "master.starts").read_text() == "x\nx\n"
    assert (tmp_path / "worker.starts").read_text() == "x\nx\n"


def test_independent_workers_restart_alone(tmp_path: Path) -> None:
    cmd = 'echo x >> "$ROLE.starts"; if [ ! -e killed ]; then touch killed; exit 143; fi'
    launches = [launch(tmp_path, "worker", 0, "echo x >> w0.starts; sleep 1.5", ROLE="w0"),
                launch(tmp_path, "worker", 1, cmd, ROLE="w1")]
    out = Supervisor(launches, Policy(max_restarts=1, scope=RestartScope.REPLICA)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert (tmp_path / "w0.starts").read_text() == "x\n"
    assert (tmp_path / "w1.starts").read_text() == "x\nx\n"


def test_retryable_exit_without_restarts_left_fails(tmp_path: Path) -> None:
    out = Supervisor([launch(tmp_path, "worker", 0, "echo x >> tries; exit 138")],
                     Policy(max_restarts=2)).run()
    assert out.status is RunStatus.FAILED
    assert out.restarts == 2
    assert "no restarts left (maxRestarts: 2)" in out.reason
    assert (tmp_path / "tries").read_text() == "x\nx\nx\n"


def test_unconditional_restarts_retry_any_failure(tmp_path: Path) -> None:
    cmd = "echo x >> tries; [ $(wc -l < tries) -ge 2 ]"
    out = Supervisor([launch(tmp_path, "worker", 0, cmd)],
                     Policy(max_restarts=1, unconditional=True)).run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.restarts == 1


def test_timeout_stops_the_job_and_fails_it(tmp_path: Path) -> None:
    out = Supervisor([launch(tmp_path, "worker", 0, "sleep 300")],
                     Policy(timeout_seconds=0.5, grace_seconds=5)).run()
    assert out.status is RunStatus.FAILED
    assert out.reason.startswith("timed out after 0.5s")
    assert out.exits == (ReplicaExit("worker", 0, 143),)


def test_service_roles_are_stopped_when_the_workers_finish(tmp_path: Path) -> None:
    launches = [launch(tmp_path, "ps", 0, "sleep 300"), launch(tmp_path, "worker", 0, "true")]
    out = Supervisor(launches, Policy(service_roles=frozenset({"ps"}))).run()
    assert out.status is RunStatus.SUCCEEDED
    assert dict((e.role, e.exit_code) for e in out.exits) == {"ps": 143, "worker": 0}


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
    wait_for("every process to start",
             lambda: pids_file.exists() and len(pids_file.read_text().split()) == 8)
    assert tagged_pids(sup.tag)  # the sweep would find them
    sup.request_stop()
    thread.join(60)
    assert result[0].status is RunStatus.CANCELLED
    pids = [int(p) for p in pids_file.read_text().split()]
    assert [p for p in pids if pid_alive(p)] == []
    assert tagged_pids(sup.tag) == []


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
    wait_for("the replica to start",
             lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2)
    runner.kill()
    runner.wait()
    pids = [int(p) for p in pids_file.read_text().split()]
    wait_for("the sidecar to stop the orphans", lambda: not any(pid_alive(p) for p in pids))
    assert tagged_pids("tag-x") == []
