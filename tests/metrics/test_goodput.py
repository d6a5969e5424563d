"""The goodput ledger: a run's wall time split into queue wait, start-up, productive time, time
lost to restarts and hang time, adding up to the wall time, each priced; idle GPU-seconds beside
it. Before this no verb said where a run's time went. The records here are written as the local
runner writes them (the registry through its API, progress.jsonl, usage.jsonl, training_job.json);
tests/local/test_goodput_run.py gets them from a real run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.clirunner import Cli
from trainstack.contract.rundir import RunDir
from trainstack.local.progress import ProgressLog
from trainstack.metrics import progress
from trainstack.metrics.goodput import PARTS, split
from trainstack.metrics.progress import Mark
from trainstack.recovery import HUNG, PREEMPTED
from trainstack.registry import NewRun, Registry, Restart, RunStatus
from trainstack.registry.model import ReplicaExit


def _restart(at: float, reason: str) -> Restart:
    return Restart(at=at, role="master", index=0, exit_code=143, reason=reason)


MARKS = [
    Mark(2.0, None),  # first output
    Mark(3.0, 4),
    Mark(6.0, 12),
    Mark(8.0, 10),  # preempted at 7: resumed from an earlier checkpoint
    Mark(9.0, 15),  # step 12 passed again
    Mark(10.0, 19),
    Mark(17.0, 16),  # hung after 10, restarted at 16
    Mark(18.0, 20),
    Mark(25.0, 30),
]


def test_the_parts_add_up_to_the_wall_time_each_from_its_records() -> None:
    history = [_restart(7.0, PREEMPTED), _restart(16.0, HUNG)]
    parts = split(0.0, 26.0, MARKS, history, hang_window=5.0)
    assert set(parts) == set(PARTS)
    assert sum(parts.values()) == pytest.approx(26.0)
    assert parts["queue"] == 0.0  # a local run is never queued
    assert parts["start-up"] == pytest.approx(2.0)  # running → first output
    assert parts["restarts"] == pytest.approx(2.0)  # preempted at 7 → step 12 again at 9
    assert parts["hang"] == pytest.approx(7.0)  # 5s silent before 16, then step 19 again at 18
    assert parts["productive"] == pytest.approx(15.0)


def test_overlaps_count_once_hang_first_then_restarts_then_start_up() -> None:
    # A failure during start-up, before any step: nothing says what was redone; a hang window
    # reaching back over a preemption's loss counts as hang.
    history = [
        _restart(1.0, PREEMPTED),
        _restart(3.5, PREEMPTED),
        _restart(6.5, PREEMPTED),
        _restart(10.0, HUNG),
    ]
    parts = split(0.0, 26.0, MARKS, history, hang_window=5.0)
    assert sum(parts.values()) == pytest.approx(26.0)
    assert parts["start-up"] == pytest.approx(2.0)
    assert parts["hang"] == pytest.approx(5.0 + 8.0)  # 5..10, then 10 → step 19 again at 18
    # 3.5 → step 4 again at 6, less what the hang holds; 6.5's loss lies inside the hang
    assert parts["restarts"] == pytest.approx(1.5)


def test_a_step_never_reached_again_is_lost_until_the_end() -> None:
    marks = [Mark(1.0, 1), Mark(4.0, 8), Mark(6.0, 2)]
    parts = split(0.0, 10.0, marks, [_restart(5.0, "OOMKilled")], hang_window=0.0)
    assert parts["restarts"] == pytest.approx(5.0)
    assert sum(parts.values()) == pytest.approx(10.0)
    # no marks at all: the whole run is start-up (it never showed a sign of training)
    assert split(0.0, 10.0, [], [], 0.0)["start-up"] == pytest.approx(10.0)


def _metrics(run: RunDir, rows: int) -> None:
    run.metrics.mkdir(parents=True, exist_ok=True)
    metas = [
        {"name": "epoch", "x": "epoch", "ys": ["acc"]},
        {"name": "steps", "x": "step", "ys": ["loss"]},
    ]
    (run.metrics / "metrics.json").write_text(json.dumps({"id": "r", "metas": metas}))
    (run.metrics / "epoch.csv").write_text("epoch,acc\n1,0.5\n")
    body = "".join(f"{s},{1 / s}\n" for s in range(1, rows + 1))
    (run.metrics / "steps.csv").write_text("step,loss\n" + body)


def test_the_progress_clock_marks_first_output_and_each_change_of_step(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    log = tmp_path / "logs" / "master-0.log"
    log.parent.mkdir()
    log.write_bytes(b"")
    clock = ProgressLog(run, [log])
    clock.tick()  # nothing yet: no mark
    assert progress.read(run.progress, root=tmp_path) == ()
    log.write_text("starting\n")
    _metrics(run, 0)  # the header alone is no step
    clock.tick()
    _metrics(run, 3)
    clock.tick()
    clock.tick()  # unchanged: no new mark
    _metrics(run, 2)  # rewritten from a checkpoint: a lower step is a change
    clock.tick()
    marks = progress.read(run.progress, root=tmp_path)
    assert [m.step for m in marks] == [None, 3.0, 2.0]  # the step chart, not the first one
    assert marks == tuple(sorted(marks, key=lambda m: m.t))


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "platform"
    root.mkdir()
    (root / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "trainstack", "runtime": "python"}))
    costs = {"currency": "CNY", "vcpuHour": 36.0, "gpuHour": 72.0}
    config = {"trainstack:mode": "kubeconfig", "trainstack:costs": costs}
    (root / "Pulumi.priced.yaml").write_text(yaml.safe_dump({"config": config}))
    return root


def _recorded_run(home: Path) -> str:
    """A finished local run with a preemption and a hang restart, its records written as the
    runner writes them; its marks spread over its real (short) wall time."""
    with Registry.open(home) as reg:
        rec = reg.create(
            NewRun("ledger", "ledger", "1.0.0", job_type="pytorch", tags={"env": "priced"})
        )
        reg.mark_running(rec.id, [ReplicaExit("master", 0, None)])
        time.sleep(0.5)
        started = reg.get(rec.id).started_at
        assert started is not None
        run = RunDir(Path(str(rec.run_dir)))
        run.config.mkdir(parents=True)
        job = {
            "resources": {"master": {"replicas": 1, "cpu": 1, "gpu": 1}},
            "faultTolerance": {"maxRestarts": 2, "hangTimeoutSeconds": 5},
        }
        run.training_job.write_text(json.dumps(job))
        scale = 0.4 / 26  # MARKS' 26 seconds into 0.4
        marks = [
            {"t": started + m.t * scale, **({"step": m.step} if m.step else {"output": True})}
            for m in MARKS
        ]
        run.progress.write_text("".join(json.dumps(m) + "\n" for m in marks))
        # the one GPU idle (0%) for 3s of samples
        usage = [
            {"t": started + i, "replica": "master-0", "cpu_percent": 5, "rss_bytes": 1,
             "gpus": [{"index": 0, "util_percent": 0 if i < 4 else 90, "mem_used_bytes": 1}]}
            for i in range(6)
        ]  # fmt: skip
        run.usage.write_text("".join(json.dumps(u) + "\n" for u in usage))
        reg.record_restart(rec.id, _restart(started + 7 * scale, PREEMPTED))
        reg.record_restart(rec.id, _restart(started + 16 * scale, HUNG))
        reg.finish(rec.id, RunStatus.SUCCEEDED, restarts=2)
        return rec.id


def test_runs_show_and_its_json_price_each_part(tmp_path: Path, cli: Cli) -> None:
    run_id = _recorded_run(cli.home)
    project = _project(tmp_path)
    cli.env["TRAINSTACK_IDLE_SECONDS"] = "2"
    done = cli("runs", "show", run_id, "--json", "--project", project)
    assert done.returncode == 0, done.output
    ledger = json.loads(done.out)["goodput"]
    parts = {p["part"]: p for p in ledger["parts"]}
    assert list(parts) == list(PARTS)
    wall = ledger["wall_seconds"]
    assert sum(p["seconds"] for p in parts.values()) == pytest.approx(wall)
    assert ledger["currency"] == "CNY"
    # 1 vCPU at 36/h and 1 GPU at 72/h: 0.03 CNY per second of wall time
    for p in parts.values():
        assert p["cost"] == pytest.approx(p["seconds"] * 0.03)
    # The hang timeout (5s, from training_job.json) reaches back over the whole of this short
    # run before the hang restart: start-up and the preemption's loss count as hang.
    scale = 0.4 / 26
    assert parts["hang"]["seconds"] == pytest.approx(18 * scale, abs=0.01)
    assert parts["restarts"]["seconds"] == parts["start-up"]["seconds"] == 0.0
    assert parts["productive"]["seconds"] == pytest.approx(wall - 18 * scale, abs=0.01)
    assert ledger["idle_accelerators"] == {"gpu_seconds": 3.0, "cost": pytest.approx(3 * 0.02)}
    text = cli("runs", "show", run_id, "--project", project)
    assert text.returncode == 0
    rows = [line for line in text.out.splitlines() if line.startswith("goodput")]
    assert "h=hang" in rows[0] and rows[0].count("[") == 1
    assert any(r.split(None, 1)[1].startswith("hang: ") and "CNY " in r for r in rows)
    assert "idle accelerators: 3.0 GPU-s, CNY 0.0600" in text.out


def test_the_report_shows_the_ledger(tmp_path: Path, cli: Cli) -> None:
    run_id = _recorded_run(cli.home)
    page = tmp_path / "report.html"
    done = cli("report", run_id, "-o", page)
    assert done.returncode == 0, done.output
    html = page.read_text()
    assert "<th>goodput</th><td>[" in html
    assert "<th>goodput</th><td>productive: " in html


def test_a_run_without_its_records_shows_no_ledger(cli: Cli) -> None:
    with Registry.open(cli.home) as reg:
        rec = reg.create(NewRun("gone", "c", "1"))
        reg.mark_running(rec.id, [])
        reg.finish(rec.id, RunStatus.FAILED)
    done = cli("runs", "show", rec.id, "--json")
    assert done.returncode == 0, done.output
    ledger = json.loads(done.out)["goodput"]
    # no run directory any more: the whole wall time is start-up, unpriced
    assert ledger["currency"] is None
    assert sum(p["seconds"] for p in ledger["parts"]) == pytest.approx(ledger["wall_seconds"])


def test_the_progress_clock_never_hangs_on_or_follows_what_a_run_put_there(
    tmp_path: Path,
) -> None:
    # A replica may leave anything in $METRICS: a FIFO for its series (opened, it would wait
    # for a writer), a link out of the run directory. The clock reads neither and goes on.
    import os

    run = RunDir(tmp_path / "run")
    _metrics(run, 3)
    (run.metrics / "steps.csv").unlink()
    os.mkfifo(run.metrics / "steps.csv")
    outside = tmp_path / "secret.csv"
    outside.write_text("step,loss\n99,1\n")
    clock = ProgressLog(run, [])
    clock.tick()
    assert progress.read(run.progress, root=run.root) == ()
    (run.metrics / "steps.csv").unlink()
    (run.metrics / "steps.csv").symlink_to(outside)
    clock.tick()
    assert progress.read(run.progress, root=run.root) == ()
    # nor does the ledger's reader hang on a progress.jsonl that is a FIFO
    os.mkfifo(tmp_path / "run" / "fifo")
    assert progress.read(tmp_path / "run" / "fifo", root=run.root) == ()


def test_the_console_shows_the_ledger_as_the_report_does(tmp_path: Path, cli: Cli) -> None:
    from tests.ui.conftest import LOOPBACK
    from trainstack.ui.app import UiConfig, create_app

    run_id = _recorded_run(cli.home)
    with create_app(UiConfig(home=cli.home)).test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        page = client.get(f"/runs/{run_id}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200, html[:2000]
    assert "<th>goodput</th><td>[" in html and "<th>goodput</th><td>hang: " in html


def test_a_progress_file_replaced_by_a_link_is_never_written_through(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    _metrics(run, 2)
    target = tmp_path / "elsewhere"
    target.write_text("")
    run.progress.symlink_to(target)
    ProgressLog(run, []).tick()
    assert target.read_text() == "" and run.progress.is_symlink()
