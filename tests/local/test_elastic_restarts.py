"""torchElastic's restarts in place are a run's restarts: when a worker of torchrun's agent is
SIGKILLed, the agent restarts it (and the other agents theirs, the rendezvous having changed)
without the replica's process ever exiting. Before, the log showed the restart and `runs show`
said `restarts 0`: the runner only saw replicas exit. Real torchrun agents, real SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import wait_for, write_run
from trainstack import recovery
from trainstack.local.procgroup import REPLICA_TAG_ENV, replica_tag, tagged_pids
from trainstack.registry import Registry, RunStatus
from trainstack.registry.model import Restart

pytestmark = pytest.mark.slow  # torchrun agents


def _starts(gate: Path) -> list[list[str]]:
    path = gate / "starts"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _kill_worker(run_dir: Path, key: str) -> None:
    """SIGKILL what torchrun's agent started in replica `key` (its worker and what that runs):
    processes of the replica that carry the agent's TORCHELASTIC_RESTART_COUNT."""
    pids = [
        pid
        for pid in tagged_pids(replica_tag(run_dir.name, key), REPLICA_TAG_ENV)
        if b"TORCHELASTIC_RESTART_COUNT=" in _environ(pid)
    ]
    assert pids, f"no worker of {key}'s agent"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _history(home: Path) -> list[Restart]:
    with Registry.open(home) as reg:
        return [h for record in reg.list() for h in reg.restarts(record.id)]


def _history(home: Path) -> list[tuple[str, str]]:
    with Registry.open(home) as reg:
        return [(h.key, h.reason) for r in reg.list() for h in reg.restarts(r.id)]


def _until(runner: subprocess.Popen[str], what: str, predicate: Callable[[], bool]) -> None:
    def check() -> bool:
        if runner.poll() is not None:
            raise AssertionError(f"the run ended before {what}: " + "".join(runner.communicate()))
        return predicate()

    wait_for(what, check, timeout=300)


FAILED = recovery.ELASTIC_FAILED
REJOINED = recovery.ELASTIC_REJOINED


def test_workers_killed_under_torch_elastic_are_recorded_restarts(tmp_path: Path, cli: Cli) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    spec = write_run(
        tmp_path,
        "gate",
        "elastic-gate",
        resources={"master": {"replicas": 1}, "worker": {"replicas": 1}},
        torchElastic={"maxRestarts": 2},
        env={"GATE": str(gate)},
    )
    runner = cli.start("run", spec, "--local", "--grace", "5")
    try:
        _until(runner, "both workers' start", lambda: len(_starts(gate)) == 2)
        (run_dir,) = (cli.home / "runs").iterdir()
        # worker-0's agent restarts its failed worker (its restart count goes up); master-0's
        # restarts its own for the new rendezvous round.
        _kill_worker(run_dir, "worker-0")
        _until(runner, "worker-0's restart", lambda: ("worker-0", FAILED) in _history(cli.home))
        # That record was made on seeing worker-0's new worker: when master-0's worker is
        # killed next, worker-0's restart for the rendezvous is seen as its worker replaced.
        _until(runner, "the workers' second start", lambda: len(_starts(gate)) == 4)
        _kill_worker(run_dir, "master-0")
        want = [("master-0", FAILED), ("worker-0", REJOINED)]
        _until(runner, "the second round", lambda: all(w in _history(cli.home) for w in want))
        _until(runner, "the workers' third start", lambda: len(_starts(gate)) == 6)
        for key in ("master-0", "worker-0"):
            (gate / f"open-{key}").touch()
        stdout, stderr = runner.communicate(timeout=300)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, stdout + stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.SUCCEEDED
    got = sorted((h.key, h.reason, h.counted) for h in history)
    # Restarts in place: recorded, not counted against faultTolerance (KubeDL never sees them).
    # master-0's restart in the first round is seen when its first worker was seen before the
    # test killed worker-0's (they ran no longer than that): there either way, at most once.
    maybe = ("master-0", REJOINED, False)
    assert [g for g in got if g != maybe] == sorted(
        [("master-0", FAILED, False), ("worker-0", FAILED, False), ("worker-0", REJOINED, False)]
    ), history
    assert got.count(maybe) <= 1, history
    assert record.restarts == len(history)
    worker = next(h for h in history if h.key == "worker-0" and h.reason == FAILED)
    assert "restart 1 of torchElastic.maxRestarts 2" in worker.detail, worker.detail
    shown = cli("runs", "show", record.id)
    assert f"restarts   {len(history)} (0 counted against maxRestarts)" in shown.out, shown.out
    assert "worker-0  " + FAILED in shown.out, shown.out
    # The live view said so as it happened.
    assert f"worker-0 restarted ({FAILED})" in stdout + stderr
