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
forwards it to the command's process group.

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
from typing import Any

import pytest

from trainstack.render import render_run
from trainstack.spec import load_run

PROBE = """\
import os, signal, sys, time, pathlib
out = pathlib.Path(os.environ["PROBE_DIR"])
def on_term(*_):
    (out / "term").write_text("SIGTERM")
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
(out / "ready").write_text(str(os.getpid()))
time.sleep(120)
"""


def _spec(tmp: Path, job_type: str, role: str) -> Path:
    (tmp / "src").mkdir()
    (tmp / "src" / "term.py").write_text(PROBE)
    (tmp / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        "metadata: {name: term-probe, version: 1.0.0}\n"
        f"spec:\n  jobType: {job_type}\n  image: registry.example.com/acme/python:3.11\n"
        "  code: ./src\n  command: python3 term.py\n"
    )
    (tmp / "run.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: term-probe-01}\n"
        "spec:\n  component: ./component.yaml\n"
        f"  resources:\n    {role}: {{cpu: 1, memory: 1Gi}}\n"
    )
    return tmp / "run.yaml"


def _main_container(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = docs[-1]
    spec = job["spec"]
    key = next((k for k in spec if k.endswith("ReplicaSpecs")), None)
    template = next(iter(spec[key].values()))["template"] if key else spec["template"]
    return template["spec"]["containers"][0], [d for d in docs if d["kind"] == "ConfigMap"]


def _unescape(text: str, root: Path) -> str:
    # `$$` is the kubelet's escape for `$`; the pod's /ml tree lives under `root` here.
    return text.replace("$$", "$").replace("/ml/", f"{root}/ml/")


def _start_as_pid1(tmp: Path, job_type: str, role: str) -> tuple[subprocess.Popen[bytes], Path]:
    docs = render_run(load_run(_spec(tmp, job_type, role)))
    container, maps = _main_container(docs)
    root = tmp / "pod"
    (root / "ml" / "usercode").mkdir(parents=True)
    (root / "ml" / "usercode" / "term.py").write_text(PROBE)
    for cm in maps:
        if cm["metadata"]["name"].endswith("-trainstack-launcher"):
            (root / "ml" / "launcher").mkdir(parents=True)
            for name, text in cm["data"].items():
                (root / "ml" / "launcher" / name).write_text(text)
    probe = tmp / "probe"
    probe.mkdir()
    env = {"PATH": os.environ["PATH"], "PROBE_DIR": str(probe)}
    for e in container.get("env") or ():
        if "value" in e and e["value"] is not None:
            env[e["name"]] = _unescape(e["value"], root)
    argv = [_unescape(a, root) for a in [*container["command"], *(container.get("args") or [])]]
    cwd = _unescape(container["workingDir"] + "/", root)
    proc = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", *argv],
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    return proc, probe


def _init_of(proc: subprocess.Popen[bytes]) -> int:
    """The PID (in this namespace) of the unshared namespace's init: unshare's one child."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    for _ in range(200):
        found = children.read_text().split()
        if found:
            return int(found[0])
        time.sleep(0.05)
    raise AssertionError("unshare started no child")


@pytest.mark.subprocess
@pytest.mark.parametrize(("job_type", "role"), [("pytorch", "master"), ("custom", "worker")])
def test_the_kubelets_sigterm_reaches_the_command_of_a_plain_render(
    tmp_path: Path, job_type: str, role: str
) -> None:
    proc, probe = _start_as_pid1(tmp_path, job_type, role)
    try:
        deadline = time.monotonic() + 60
        while not (probe / "ready").exists():
            assert proc.poll() is None, f"the container exited {proc.returncode} before starting"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        os.kill(_init_of(proc), signal.SIGTERM)  # what the runtime does on a pod's deletion
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
