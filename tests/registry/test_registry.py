"""The run registry against a real SQLite file, written by several processes at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trainstack.errors import NotFoundError
from trainstack.registry import (
    NewRun,
    Registry,
    ReplicaExit,
    RunFilter,
    RunKind,
    RunStatus,
    current_runner,
)
from trainstack.registry.home import registry_path, state_home
from trainstack.registry.migrations import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def _new(name: str = "mnist", **kw: object) -> NewRun:
    return NewRun(name=name, component="mnist-ddp", component_version="1.2.0", **kw)  # type: ignore[arg-type]


def test_lifecycle_round_trips_typed_records(tmp_path: Path) -> None:
    with Registry.open(tmp_path) as reg:
        rec = reg.create(_new(experiment="base", tags={"team": "vision"}), current_runner())
        assert rec.status is RunStatus.PENDING
        assert rec.run_dir == tmp_path / "runs" / rec.id
        assert rec.id.startswith("mnist-")
        exits = [ReplicaExit("worker", 1, None), ReplicaExit("master", 0, None)]
        reg.mark_running(rec.id, exits)
        reg.record_progress(rec.id, exits=[ReplicaExit("master", 0, 137)], restarts=1)
        done = reg.finish(
            rec.id, RunStatus.FAILED, exits=[ReplicaExit("master", 0, 1)], reason="exit 1"
        )
    assert done.status is RunStatus.FAILED
    assert done.exits == (ReplicaExit("master", 0, 1),)
    assert done.restarts == 1
    assert done.reason == "exit 1"
    assert done.tags == {"team": "vision"}
    assert done.started_at is not None and done.finished_at is not None
    assert done.duration is not None and done.duration >= 0


def test_first_recorded_end_wins(tmp_path: Path) -> None:
    with Registry.open(tmp_path) as reg:
        rec = reg.create(_new(), current_runner())
        reg.finish(rec.id, RunStatus.CANCELLED)
        again = reg.finish(rec.id, RunStatus.SUCCEEDED)
    assert again.status is RunStatus.CANCELLED


def test_schema_is_versioned_and_migration_is_idempotent(tmp_path: Path) -> None:
    Registry.open(tmp_path).close()
    Registry.open(tmp_path).close()
    conn = sqlite3.connect(registry_path(tmp_path))
    versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    assert mode == "wal"


def test_filters_and_resolution(tmp_path: Path) -> None:
    with Registry.open(tmp_path) as reg:
        a = reg.create(_new("alpha", experiment="e1", tags={"team": "vision"}), current_runner())
        b = reg.create(_new("beta", experiment="e2", tags={"team": "nlp"}), current_runner())
        c = reg.create(_new("alpha", experiment="e1"), current_runner())
        reg.finish(b.id, RunStatus.SUCCEEDED)
        assert {r.id for r in reg.list(RunFilter(name="alpha"))} == {a.id, c.id}
        assert [r.id for r in reg.list(RunFilter(status=RunStatus.SUCCEEDED))] == [b.id]
        assert [r.id for r in reg.list(RunFilter(tags={"team": "vision"}))] == [a.id]
        assert [r.id for r in reg.list(RunFilter(experiment="e2"))] == [b.id]
        assert reg.list(RunFilter(since=time.time() + 60)) == []
        assert reg.list(RunFilter(kind=RunKind.CLUSTER)) == []
        assert reg.resolve("alpha").id == c.id  # a name means its latest run
        assert reg.resolve(b.id).id == b.id
        assert reg.resolve(b.id[:-2]).id == b.id  # an unambiguous id prefix
        with pytest.raises(NotFoundError, match="alpha"):
            reg.resolve("alpah")


def test_cluster_runs_have_no_run_dir(tmp_path: Path) -> None:
    with Registry.open(tmp_path) as reg:
        rec = reg.create(_new(kind=RunKind.CLUSTER, stack_name="mnist-run-1"))
    assert rec.run_dir is None
    assert rec.stack_name == "mnist-run-1"


def test_dead_runner_is_detected_and_its_run_marked_interrupted(tmp_path: Path) -> None:
    # A real runner process records a running run, then dies without recording an end.
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from trainstack.registry import Registry, current_runner, NewRun
        reg = Registry.open(Path({str(tmp_path)!r}))
        rec = reg.create(NewRun(name="doomed", component="c", component_version="1.0.0"),
                         current_runner())
        reg.mark_running(rec.id, [])
        print(rec.id, flush=True)
        os._exit(0)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
    )
    run_id = out.stdout.strip()
    with Registry.open(tmp_path) as reg:
        live = reg.create(_new("alive"), current_runner())
        assert reg.get(run_id).status is RunStatus.RUNNING
        reaped = reg.mark_interrupted()
        assert reaped == [run_id]
        assert reg.get(run_id).status is RunStatus.INTERRUPTED
        assert reg.get(live.id).status is RunStatus.PENDING  # our own runner is alive


def test_several_processes_write_at_once_and_the_registry_stays_consistent(
    tmp_path: Path,
) -> None:
    workers, per_worker = 6, 15
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from trainstack.registry import Registry, current_runner, NewRun, ReplicaExit, RunStatus
        me = sys.argv[1]
        for i in range({per_worker}):
            with Registry.open(Path({str(tmp_path)!r})) as reg:
                rec = reg.create(NewRun(name="w" + me, component="c", component_version="1.0.0",
                                        tags={{"worker": me}}), current_runner())
                reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
                reg.record_progress(rec.id, exits=[ReplicaExit("worker", 0, 137)], restarts=1)
                reg.finish(rec.id, RunStatus.SUCCEEDED, exits=[ReplicaExit("worker", 0, 0)])
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(w)], cwd=REPO, stderr=subprocess.PIPE, text=True
        )
        for w in range(workers)
    ]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, errors
    with Registry.open(tmp_path) as reg:
        runs = reg.list()
        assert len(runs) == workers * per_worker
        assert len({r.id for r in runs}) == len(runs)
        assert {r.status for r in runs} == {RunStatus.SUCCEEDED}
        assert {r.restarts for r in runs} == {1}
        assert {r.exits for r in runs} == {(ReplicaExit("worker", 0, 0),)}
        for w in range(workers):
            assert len(reg.list(RunFilter(tags={"worker": str(w)}))) == per_worker


def test_home_comes_from_override_then_env_then_the_users_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRAINSTACK_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    # per user, not per directory: the same wherever trainstack runs
    assert state_home() == tmp_path / "me" / ".local" / "state" / "trainstack"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_home() == tmp_path / "xdg" / "trainstack"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec: ignore it
    assert state_home() == tmp_path / "me" / ".local" / "state" / "trainstack"
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "env"))
    assert state_home() == tmp_path / "env"
    assert state_home(tmp_path / "flag") == tmp_path / "flag"
