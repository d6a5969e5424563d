"""A pod's first process must pass the kubelet's SIGTERM on to the command, in every rendered form.

The container runtime sends SIGTERM to the container's PID 1 from outside its PID namespace, and
the kernel delivers a signal from an ancestor namespace to a namespace's init only when the init
handles it (pid_namespaces(7): "only signals for which the init process has established a signal
handler can be sent to the init process by other members of the PID namespace"; the same holds
from an ancestor namespace, except SIGKILL and SIGSTOP). `sh -c SCRIPT` as PID 1 installs no
handler and does not exec the last command, so the TERM was dropped and the command SIGKILLed
after the grace period (exit 137), while a local run's command always got SIGTERM (exit 143):
checkpoint-on-SIGTERM code passed the local preemption drill and lost its checkpoint on the
cluster. Every command-running replica now runs behind the launcher, which handles SIGTERM and
forwards it to the command's process group, and which, once `sh` itself has died of it, gives the
rest of that group the grace period to finish: when a PID namespace's init exits, the kernel
SIGKILLs everything left in it, so a launcher that left with `sh` killed the command mid-checkpoint
(the probe's handler takes a second, as a checkpoint would).

The rendered container is run here as PID 1 of a PID namespace of its own (`unshare --pid --fork`,
in a user namespace so no root is needed where the kernel allows it), exactly as rendered: its
command, args, working directory and literal env, with the pod's `/ml` paths moved under a
temporary folder (the only change), the launcher's files as its ConfigMap would mount them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.render.podrun import init_of, start_container

PROBE = """\
import os, signal, sys, time, pathlib
out = pathlib.Path(os.environ["PROBE_DIR"])
def on_term(*_):
    time.sleep(1)  # a checkpoint takes a moment
    (out / "term").write_text("SIGTERM")
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
(out / "ready").write_text(str(os.getpid()))
time.sleep(120)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(("job_type", "role"), [("pytorch", "master"), ("custom", "worker")])
def test_the_kubelets_sigterm_reaches_the_command_of_a_plain_render(
    tmp_path: Path, job_type: str, role: str
) -> None:
    proc, probe = start_container(tmp_path, job_type, role, {"term.py": PROBE}, "python3 term.py")
    try:
        deadline = time.monotonic() + 60
        while not (probe / "ready").exists():
            assert proc.poll() is None, f"the container exited {proc.returncode} before starting"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        os.kill(init_of(proc), signal.SIGTERM)  # what the runtime does on a pod's deletion
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        assert (probe / "term").exists(), (
            "the command never got SIGTERM: PID 1 dropped it (a pod would be SIGKILLed, exit 137)"
        )
        assert code == 143  # the command's own exit status, as a local run records it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
