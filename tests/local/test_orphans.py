"""No replica process outlives its run: not one that left its session and cleared its
environment, not one whose runner and sidecar were SIGKILLed together."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import pid_alive, wait_for, write_run
from trainstack.local import procgroup
from trainstack.registry import Registry, RunStatus

# The runner's own process tree is what is checked: `trainstack run` as a process of its own.
pytestmark = pytest.mark.subprocess


def _stray_component(root: Path) -> Path:
    """A replica that leaves behind a process in a session of its own, with an empty
    environment (no trainstack tag), orphaned by a double fork; then exits 0."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "escape.py").write_text(
        textwrap.dedent("""\
        import os, sys, time
        target = os.path.join(sys.argv[1], "stray")
        pid = os.fork()
        if pid == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sh", ["sh", "-c",
                          'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 300', target], {})
            os._exit(0)
        os.waitpid(pid, 0)
        while not os.path.exists(target):
            time.sleep(0.02)
        print("left a stray behind", flush=True)
        """)
    )
    (root / "component.yaml").write_text(
        textwrap.dedent("""\
        apiVersion: trainstack.dev/v1
        kind: Component
        metadata: {name: escaper, version: 1.0.0}
        spec:
          jobType: custom
          image: registry.example.com/test/python:3
          code: ./src
          command: python escape.py $PAI_OUTPUT_RESULT
          outputs:
            - {name: result}
        """)
    )
    return root / "component.yaml"


def _environ_has_tag(pid: int) -> bool:
    try:
        return procgroup.PROCESS_TAG_ENV.encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_a_stray_without_session_or_tag_is_swept_when_the_run_ends(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(tmp_path, _stray_component(tmp_path / "escaper"), "escaper")
    # Processes mode: the stray's pid, which the replica writes, is this machine's.
    result = cli("run", spec, "--local", "--no-install", "--sandbox", "processes")
    assert result.returncode == 0, result.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.run_dir is not None
    stray = int((record.run_dir / "output" / "result" / "stray").read_text())
    try:
        wait_for("the stray to be gone", lambda: not pid_alive(stray), timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stray, signal.SIGKILL)


def _sidecar_of(runner: int) -> int:
    for pid in procgroup.descendants(runner):
        with contextlib.suppress(OSError):
            if b"trainstack.local.deadman" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise AssertionError("no sidecar")


@pytest.mark.slow
def test_runner_and_sidecar_killed_together_leave_no_replica(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, "probe", "orphaned", parameters={"mode": "hang"})
    proc = cli.start("run", spec, "--local", "--no-install", "--sandbox", "processes")
    pids: list[int] = []
    try:
        runs = cli.home / "runs"
        wait_for(
            "the replica's process tree",
            lambda: any(runs.glob("*/output/result/pids-*")) if runs.exists() else False,
        )
        (pids_file,) = runs.glob("*/output/result/pids-*")
        pids = [int(p) for p in pids_file.read_text().split()]
        probe = pids[0]
        leader = int(Path(f"/proc/{probe}/stat").read_text().rsplit(")", 1)[1].split()[1])
        sidecar = _sidecar_of(proc.pid)
        assert all(_environ_has_tag(p) for p in pids)
        os.kill(sidecar, signal.SIGKILL)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        if shutil.which("setpriv"):
            # The kernel tells the replica's leader at once (PR_SET_PDEATHSIG).
            wait_for("the leader to get SIGTERM", lambda: not pid_alive(leader), timeout=10)
        # A reader records the dead runner's run interrupted; the next run ends what it left.
        listed = cli("runs", "list")
        assert listed.returncode == 0, listed.stderr
        with Registry.open(cli.home) as reg:
            (record,) = reg.list()
        assert record.status is RunStatus.INTERRUPTED
        quick = write_run(tmp_path, "probe", "next", parameters={"mode": "quick"})
        assert cli("run", quick, "--local", "--no-install").returncode == 0
        wait_for(
            "every tagged process to be gone",
            lambda: not any(pid_alive(p) for p in pids),
            timeout=10,
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_kill_adopted_leaves_a_process_that_is_no_subreaper_alone(tmp_path: Path) -> None:
    """In a process that is not a subreaper (this test process), its descendants may be
    anyone's: the adopted-stray sweep must not touch them."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in procgroup.descendants(os.getpid())
        assert not procgroup.is_subreaper()
        assert procgroup.kill_adopted(set()) == 0
        time.sleep(0.1)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


@pytest.mark.slow
def test_a_leftover_of_a_run_already_recorded_interrupted_is_reaped(
    tmp_path: Path, cli: Cli
) -> None:
    """The sidecar recorded the run interrupted, yet a process carrying the run's tag lives on
    (it escaped the sidecar's sweep: it left its group with setsid, and the sidecar died before
    or during its sweep). A verb that only reads the registry leaves it alone; the next
    `run --local` finds the run's runner gone and ends what still carries its tag, whatever
    status the run was given."""
    from trainstack.registry import NewRun, RunnerIdentity

    with Registry.open(cli.home) as reg:
        gone = RunnerIdentity(pid=2**22 + 1, started_at=1.0)  # past pid_max's default: no process
        rec = reg.create(NewRun(name="left", component="c", component_version="1.0.0"), gone)
        reg.finish(rec.id, RunStatus.INTERRUPTED, reason="the runner died")
    env = {**os.environ, procgroup.PROCESS_TAG_ENV: rec.id}
    stray = subprocess.Popen(
        ["sleep", "300"], env=env, start_new_session=True, stdin=subprocess.DEVNULL
    )
    try:
        for read in (("runs", "list"), ("runs", "show", rec.id), ("logs", rec.id)):
            cli(*read)
        assert stray.poll() is None  # reading touches no process
        quick = write_run(tmp_path, "probe", "next", parameters={"mode": "quick"})
        assert cli("run", quick, "--local", "--no-install").returncode == 0
        wait_for("the leftover to be reaped", lambda: stray.poll() is not None, timeout=10)
        assert stray.returncode == -signal.SIGKILL
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_a_process_tagged_by_a_live_runners_run_is_left_alone(tmp_path: Path, cli: Cli) -> None:
    """The reaping never touches a run whose runner is alive (this test process stands in)."""
    from trainstack.registry import NewRun, current_runner

    with Registry.open(cli.home) as reg:
        rec = reg.create(
            NewRun(name="live", component="c", component_version="1.0.0"), current_runner()
        )
        reg.finish(rec.id, RunStatus.SUCCEEDED)
    env = {**os.environ, procgroup.PROCESS_TAG_ENV: rec.id}
    child = subprocess.Popen(["sleep", "300"], env=env, stdin=subprocess.DEVNULL)
    try:
        listed = cli("runs", "list")
        assert listed.returncode == 0, listed.stderr
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_tagged_process_missed_by_one_scan_is_killed_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process caught mid-exec shows no environment for an instant, so one scan can miss its
    tag (how a replica's `setsid ... exec sleep` outlived its recreation). The sweep ends only
    after two empty scans in a row; the first scan's miss is replayed here."""
    from trainstack.local import proctags

    tag = f"missed-{os.getpid()}"
    child = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, proctags.PROCESS_TAG_ENV: tag}, start_new_session=True
    )
    real = proctags.tagged_pids
    scans: list[list[int]] = []

    def one_miss(t: str, name: str = proctags.PROCESS_TAG_ENV) -> list[int]:
        found = [] if not scans else real(t, name)
        scans.append(found)
        return found

    monkeypatch.setattr(proctags, "tagged_pids", one_miss)
    try:
        wait_for("its environment readable", lambda: child.pid in real(tag))
        killed = proctags.kill_tagged(tag)
        assert killed >= 1 and child.wait(timeout=30) == -signal.SIGKILL
        assert scans[0] == [] and scans[1] == [child.pid] and scans[-2:] == [[], []]
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        child.wait()
