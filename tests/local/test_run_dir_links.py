"""Paths in a run directory that user code can replace with links are never written
through: the log rotation (copy, then truncate), the usage sampler
and a replica's log opened at each start; and the sidecar commits outputs to the bindings the
runner gave it, never to what a rewritten outputs.json names. Real files, links, processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import host_pids, launch, pid_alive, wait_for, write_run
from trainstack.local import logcap, procgroup
from trainstack.local.usage import Sampler

SECRET = b"precious content outside the run directory\n" * 10


def _victim(tmp_path: Path, name: str = "victim") -> Path:
    victim = tmp_path / "outside" / name
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_bytes(SECRET)
    return victim


def test_rotation_never_truncates_or_copies_through_a_linked_log(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    log = run / "logs" / "worker-0.log"
    log.symlink_to(_victim(tmp_path))
    errors: list[str] = []
    rotator = logcap.Rotator([log], logcap.LogLimits(max_bytes=10, keep=2), errors.append, root=run)
    rotator.check()
    assert (tmp_path / "outside" / "victim").read_bytes() == SECRET
    assert not logcap.rotation(log, 1).exists()
    assert len(errors) == 1 and "worker-0.log" in errors[0]


def test_rotation_never_follows_a_linked_logs_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    elsewhere = _victim(tmp_path, "worker-0.log").parent
    (run / "logs").symlink_to(elsewhere, target_is_directory=True)
    rotator = logcap.Rotator(
        [run / "logs" / "worker-0.log"], logcap.LogLimits(max_bytes=10, keep=1), [].append, root=run
    )
    rotator.check()
    assert (elsewhere / "worker-0.log").read_bytes() == SECRET
    assert not (elsewhere / "worker-0.log.1").exists()


def test_rotation_into_a_linked_rotation_name_does_not_write_through_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    log = run / "logs" / "worker-0.log"
    log.write_bytes(b"x" * 100)
    victim = _victim(tmp_path)
    logcap.rotation(log, 1).symlink_to(victim)  # shifted to .2 as a link, never written
    rotator = logcap.Rotator([log], logcap.LogLimits(max_bytes=10, keep=2), [].append, root=run)
    rotator.check()
    assert victim.read_bytes() == SECRET
    assert logcap.rotation(log, 1).read_bytes() == b"x" * 100
    assert log.stat().st_size == 0


def test_the_usage_sampler_never_appends_through_a_link(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "usage.jsonl").symlink_to(_victim(tmp_path))
    sampler = Sampler(run / "usage.jsonl", {}, interval=0.05)
    sampler.track("worker-0", os.getpid())
    sampler.start()
    try:
        wait_for("a sample", lambda: "worker-0" in sampler.latest(), timeout=30)
    finally:
        sampler.stop()  # joins: the sample's write has been tried
    assert (tmp_path / "outside" / "victim").read_bytes() == SECRET


@pytest.mark.slow
def test_a_replica_restarted_over_a_linked_log_writes_a_new_log(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    spec = launch(tmp_path, "worker", 0, "echo started")
    spec.log_path.parent.mkdir(parents=True)
    spec.log_path.symlink_to(victim)
    replica = procgroup.start(spec, attempt=1, tag="t-links", marker="restart")
    assert replica.popen.wait(timeout=30) == 0
    assert victim.read_bytes() == SECRET
    assert not spec.log_path.is_symlink()
    assert b"started" in spec.log_path.read_bytes()


@pytest.mark.slow
def test_the_sidecar_commits_to_the_runners_bindings_not_a_rewritten_outputs_json(
    tmp_path: Path, cli: Cli
) -> None:
    out, rogue = tmp_path / "result", tmp_path / "rogue"
    spec = write_run(
        tmp_path,
        "probe",
        "orphaned",
        parameters={"mode": "hang"},
        outputs={"result": f"file://{out}/"},
    )
    runner = cli.start("run", spec, "--local", "--grace", "1")
    runs = cli.home / "runs"
    wait_for("the replica", lambda: runs.is_dir() and any(runs.glob("*/output/result/pids-0.txt")))
    pids_file = next(runs.glob("*/output/result/pids-0.txt"))
    run_dir = pids_file.parents[2]
    pids = host_pids([int(p) for p in pids_file.read_text().split()], run_dir.name, "worker-0")
    # What user code could do: point the commit somewhere else.
    (run_dir / "outputs.json").write_text(json.dumps({"result": [str(rogue), False]}))
    runner.kill()
    runner.communicate()
    wait_for("the orphans to be stopped", lambda: not any(pid_alive(p) for p in pids))
    wait_for("the outputs to be committed", lambda: (out / "partial-0.txt").exists())
    assert not rogue.exists()
