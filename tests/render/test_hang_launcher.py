"""A run with `faultTolerance.hangTimeout` runs each replica behind trainstack's in-container
launcher in its pod, the same file a local run uses: a ConfigMap beside
the job holds trainstack/launcher/launcher.py, mounted read-only at /ml/launcher/, and the main
container runs it with the image's python3 in front of the contract's `sh -c`. Before this no pod
had a launcher and nothing noticed a hung replica."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.render.conftest import SPECS
from trainstack.launcher import program_files
from trainstack.render import render_run
from trainstack.spec import load_run
from trainstack.spec.model import FaultTolerance, Run

LAUNCHER = Path(__file__).resolve().parents[2] / "trainstack" / "launcher" / "launcher.py"


def _run(name: str, hang: int | None) -> Run:
    run = load_run(SPECS / name)
    return dataclasses.replace(
        run, fault_tolerance=FaultTolerance(max_restarts=3, hang_timeout_seconds=hang)
    )


def _containers(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    key = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    return {
        role: spec["template"]["spec"]["containers"][0] for role, spec in job["spec"][key].items()
    }


def test_each_pod_runs_the_command_behind_the_shipped_launcher() -> None:
    docs = render_run(_run("mpi.run.yaml", 600))
    (cm,) = [d for d in docs if d["metadata"]["name"].endswith("-trainstack-launcher")]
    assert cm["data"] == program_files()
    assert cm["data"]["launcher.py"] == LAUNCHER.read_text()
    # the launcher imports logship.py from beside itself: the ConfigMap ships both
    assert cm["data"]["logship.py"] == (LAUNCHER.parent / "logship.py").read_text()
    containers = _containers(docs[-1])
    launcher = containers["Launcher"]
    assert launcher["command"][:3] == ["python3", "-S", "/ml/launcher/launcher.py"]
    assert launcher["command"][3] == "--hang-timeout=600"
    assert "--termination-log=/dev/termination-log" in launcher["command"]
    assert launcher["command"][-3:-1] == ["sh", "-c"]
    mounts = {m["mountPath"]: m for m in launcher["volumeMounts"]}
    assert mounts["/ml/launcher"]["readOnly"] is True
    # An MPI worker only waits for the launcher's ranks: silent by design, never "hung".
    assert containers["Worker"]["command"][:2] == ["sh", "-c"]


def test_without_hang_timeout_the_launcher_only_forwards_signals() -> None:
    """Every command-running pod's PID 1 is the launcher (tests/render/test_pid1_signals.py);
    without hangTimeout it watches for no hang."""
    docs = render_run(_run("mpi.run.yaml", None))
    assert [d for d in docs if d["metadata"]["name"].endswith("-trainstack-launcher")]
    command = _containers(docs[-1])["Launcher"]["command"]
    assert command[:3] == ["python3", "-S", "/ml/launcher/launcher.py"]
    assert not [a for a in command if a.startswith("--hang-timeout")]
