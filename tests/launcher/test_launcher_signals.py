"""The launcher as a pod's PID 1 and a local replica's front: what it passes on and when it stops.

- SIGINT and SIGHUP reach the command as themselves (its docstring always said they were passed
  on; they arrived as SIGTERM, so a program telling Ctrl-C from a deletion could not).
- A command still running `--grace` seconds after a stop was passed on is SIGKILLed, as the
  kubelet would kill the container (it waited for good).
- A command that exists but cannot be run exits 126, one that is not there 127, as POSIX shells
  and container runtimes say it (both were 127).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.local.helpers import wait_for

LAUNCHER = Path(__file__).resolve().parents[2] / "trainstack" / "launcher" / "launcher.py"
TRAP = """\
import os, pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
def got(n, f):
    (out / "got").write_text(signal.Signals(n).name)
    sys.exit(0)
for name in ("SIGINT", "SIGHUP", "SIGTERM"):
    signal.signal(getattr(signal, name), got)
(out / "ready").write_text("")
time.sleep(60)
"""
STUBBORN = """\
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1], "ready").write_text("")
time.sleep(600)
"""


def _start(tmp_path: Path, program: str, grace: float = 30.0) -> subprocess.Popen[bytes]:
    script = tmp_path / "prog.py"
    script.write_text(program)
    env = {**os.environ, "TRAINSTACK_ROLE": "worker", "TRAINSTACK_REPLICA_INDEX": "0"}
    return subprocess.Popen(
        [sys.executable, str(LAUNCHER), f"--grace={grace}", "--", sys.executable, str(script),
         str(tmp_path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


@pytest.mark.subprocess
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM])
def test_a_stop_signal_reaches_the_command_as_itself(tmp_path: Path, sig: signal.Signals) -> None:
    proc = _start(tmp_path, TRAP)
    try:
        wait_for("the command", lambda: (tmp_path / "ready").exists())
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0
        assert (tmp_path / "got").read_text() == sig.name
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.subprocess
def test_a_command_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    proc = _start(tmp_path, STUBBORN, grace=0.5)
    try:
        wait_for("the command", lambda: (tmp_path / "ready").exists())
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        # killed (128 + SIGKILL), long before the command's own 600 s sleep would end
        assert proc.wait(timeout=120) == 137
        assert time.monotonic() - started < 300
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.subprocess
def test_a_command_that_cannot_run_is_126_and_a_missing_one_127(tmp_path: Path) -> None:
    not_executable = tmp_path / "tool"
    not_executable.write_text("#!/bin/sh\necho hi\n")
    env = {**os.environ, "TRAINSTACK_ROLE": "worker", "TRAINSTACK_REPLICA_INDEX": "0"}
    for argv, code in (([str(not_executable)], 126), ([str(tmp_path / "absent")], 127)):
        done = subprocess.run(
            [sys.executable, str(LAUNCHER), "--", *argv],
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == code, (argv, done.stderr)
        assert b"cannot run" in done.stdout + done.stderr
