"""A deployed run's goodput ledger, from what its readers kept in the artifact store: `status`
records the job's creation, each pod's first start and its launcher's hang timeout (pods.json),
and the progress the store shows (a shipped log written, each step of the metrics, timed by the
files' modification times); the recovery history holds its restarts. `runs show`, the report
and `trainstack cost --goodput` split its wall time as they split a local run's.

Against recorded responses (tests/infra/kubeapi/pytorchjob-ledger-*.json, pods-ledger-*.json:
the job queued five minutes by Kueue, its worker restarted in place after an OOM kill, then
recreated) and a claim store on disk that the test fills as the pods would have, each file
stamped with the time a pod wrote it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import JOB_PATH, PODS_PATH, PlatformCLI, RecordedAPI
from tests.deploy.test_deployed_cost import PRICE, RATES, RECORD, STORE_URI, _project, run_id
from tests.deploy.test_teammates_at_scale import tags as stack_tags
from trainstack.deploy.recovery import parse_time
from trainstack.errors import UserError
from trainstack.metrics import podtimes
from trainstack.metrics.progress import Mark

api, cli, home = recorded.api, recorded.cli, recorded.home
__all__ = ["run_id"]  # the fixture, used by name

RUN = Path("runs/vision/mnist-baseline-01")
STEPS = {"name": "steps", "x": "step", "ys": ["loss"], "series": [], "description": "rank 0"}
# 4 vCPU, 16 GiB, 1 GPU per pod, at RATES: what one pod costs a second
POD_PER_SECOND = (4 * RATES["vcpuHour"] + 16 * RATES["memoryGiBHour"] + RATES["gpuHour"]) / 3600


def at(hhmmss: str) -> float:
    value = parse_time(f"2026-11-30T{hhmmss}Z")
    assert value is not None
    return value


def _written(path: Path, text: str, when: str) -> None:
    """A file as a pod left it in the store, at `when`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (at(when), at(when)))


def _step(store: Path, step: int, when: str) -> None:
    _written(store / RUN / "_metrics" / "steps.csv", f"step,loss\n{step},0.5\n", when)


def _status(store: Path) -> None:
    done = recorded.cli_exit(["status", "mnist-baseline-01", "--store", str(store)])
    assert done.code == 0, done.err
    assert "warning" not in done.err


# Each `status` reading: the pods as listed, and the step the metrics had reached by then, with
# when the step chart was written.
READINGS = (
    ("running", 100, "09:01:50"),  # the worker OOM-killed and restarted in place at 09:02:00
    ("running", 120, "09:04:00"),
    ("replaced", 300, "09:09:00"),  # the worker's pod recreated: bound 09:10:00, up 09:10:20
    ("replaced", 310, "09:12:00"),
    ("replaced", 350, "09:16:30"),  # the launcher restarted it at 09:15:00 after a 60s hang
    ("succeeded", 500, "09:19:50"),
)


def _lived(api: RecordedAPI, store: Path) -> None:
    """The run's life as six `status` readings saw it, the store filled between them."""
    metrics = {"id": "mnist-baseline-01", "metas": [STEPS]}
    _written(store / RUN / "_metrics" / "metrics.json", json.dumps(metrics), "09:00:12")
    _written(store / RUN / "logs" / "master-0.log", "epoch 1\n", "09:00:40")
    hang = {"event": "restart", "reason": "hung", "time": at("09:15:00"), "ranSeconds": 290.0,
            "detail": "no output, no metrics and no CPU for 60s", "exitCode": 137}  # fmt: skip
    for state, step, when in READINGS:
        if step == 350:  # the launcher restarted the worker after a hang, and kept its record
            events = store / RUN / "logs" / "worker-0.restarts.jsonl"
            _written(events, json.dumps(hang) + "\n", "09:15:00")
        _step(store, step, when)
        api.serve(
            JOB_PATH, f"pytorchjob-ledger-{'succeeded' if state == 'succeeded' else 'running'}.json"
        )
        api.serve(PODS_PATH, f"pods-ledger-{state}.json")
        _status(store)


def _backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend listing the run's stack (the one this registry's record names)."""
    import trainstack.deploy.workspace as workspace
    from tests.deploy.test_deploy import RecordingPulumi

    backend = RecordingPulumi()
    stack = "local.mnist-baseline-01"
    backend.stacks.add(stack)
    run = {"trainstack:run": "mnist-baseline-01", "trainstack:job": "mnist-baseline-01"}
    backend.tags[stack] = {**stack_tags(0), **run, "trainstack:logs": STORE_URI}
    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)


# created 08:55:00, both replicas running 09:00:10, ended 09:20:00
EXPECTED = {
    "queue": 310.0,  # 08:55:00 -> 09:00:10: every replica's first container started
    "start-up": 30.0,  # -> 09:00:40: the first shipped log written
    # the OOM kill in place at 09:02:00 -> step 100 again at 09:04:00; the worker's pod gone
    # at 09:10:00 (its successor scheduled) -> step 300 passed again at 09:12:00
    "restarts": 240.0,
    "hang": 150.0,  # 09:15:00 less the 60s hang timeout -> step 310 passed at 09:16:30
    "productive": 770.0,
}


def test_status_keeps_what_the_ledger_needs(
    run_id: str, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    store = tmp_path / "claim"
    _lived(api, store)
    kept = podtimes.parse((store / RECORD).read_text(), "pods.json")
    assert kept.created == at("08:55:00")
    assert {p.uid: p.running for p in kept.pods} == {
        "pod-master-0": at("09:00:10"),
        "pod-worker-0": at("09:00:10"),  # its first run's start, kept past the restart in place
        "pod-worker-0-again": at("09:10:20"),
    }
    assert {p.hang_timeout for p in kept.pods} == {60.0}
    steps = [(at(when), float(step)) for _, step, when in READINGS]
    assert [(m.t, m.step) for m in kept.marks] == [(at("09:00:40"), None), *steps]


def test_runs_show_report_and_cost_split_a_deployed_runs_wall_time(
    run_id: str,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = tmp_path / "claim"
    _lived(api, store)
    project = _project(tmp_path)
    where = ["--store", str(store), "--project", str(project)]
    shown = recorded.cli_exit(["runs", "show", run_id, *where, "--format", "json"])
    assert shown.code == 0, shown.err
    ledger = json.loads(shown.out)["goodput"]
    parts = {p["part"]: p for p in ledger["parts"]}
    assert {k: pytest.approx(p["seconds"]) for k, p in parts.items()} == EXPECTED
    assert ledger["wall_seconds"] == pytest.approx(sum(EXPECTED.values())) == 25 * 60
    # priced by the pods holding resources in each part: they add up to the run's cost
    assert sum(p["cost"] for p in parts.values()) == pytest.approx(PRICE)
    assert parts["queue"]["cost"] == pytest.approx(2 * 10 * POD_PER_SECOND)  # 09:00:00-09:00:10
    assert ledger["idle_accelerators"] is None  # nothing samples a deployed run's usage
    text = recorded.cli_exit(["runs", "show", run_id, *where])
    assert "queue: 310.0s (21%), CNY " in text.out
    assert "idle accelerators: not known" in text.out
    page = tmp_path / "report.html"
    made = recorded.cli_exit(["report", run_id, "-o", str(page), *where])
    assert made.code == 0, made.err
    assert "hang: 150.0s (10%)" in page.read_text()
    _backend(monkeypatch)
    rolled = recorded.cli_exit(["cost", "--goodput", "--by", "run", "--format", "json", *where])
    assert rolled.code == 0, rolled.err
    (group,) = json.loads(rolled.out)["groups"]
    assert group["goodput"]["runs"] == 1
    summed = {p["part"]: p["seconds"] for p in group["goodput"]["parts"]}
    assert summed == pytest.approx(EXPECTED)


def test_a_teammate_sees_the_same_ledger_from_the_store_alone(
    run_id: str,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bob's registry never held the run: the restart in place the API showed the deployer's
    `status` is in the store too, so his ledger and recovery history are the deployer's."""
    store = tmp_path / "claim"
    _lived(api, store)
    project = _project(tmp_path)
    where = ["--store", str(store), "--project", str(project), "--format", "json"]
    mine = json.loads(recorded.cli_exit(["runs", "show", run_id, *where]).out)
    _backend(monkeypatch)
    bob = tmp_path / "bob"
    bob.mkdir()
    shown = recorded.cli_exit(["runs", "show", "mnist-baseline-01", "--home", str(bob), *where])
    assert shown.code == 0, shown.err
    theirs = json.loads(shown.out)
    assert theirs["goodput"] == mine["goodput"]
    assert {p["part"]: p["seconds"] for p in theirs["goodput"]["parts"]} == pytest.approx(EXPECTED)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("created", "yesterday", "pods.json: created: expected a number, got 'yesterday'"),
        ("marks", {"t": 1}, "pods.json: marks: expected a list"),
        ("marks", [{"t": 1.0, "step": "x"}], "pods.json: marks[0].step: expected a number"),
        ("restarts", [{"at": 1.0}], "pods.json: restarts[0].role: expected text"),
    ],
)
def test_a_damaged_ledger_field_is_one_clear_error_naming_it(
    field: str, value: object, said: str
) -> None:
    kept = podtimes.PodTimes("r", "local", "local.r", None, "c", None, "succeeded", 10.0)
    doc = {**json.loads(kept.to_json()), field: value}
    with pytest.raises(UserError) as err:
        podtimes.parse(json.dumps(doc), "pods.json")
    assert said in err.value.message


def test_a_step_below_zero_is_kept() -> None:
    """A chart's x may be negative (a warm-up counted down): a step, not damage."""
    mark = Mark(5.0, -3.0)
    kept = podtimes.PodTimes(
        "r", "local", "local.r", None, "c", None, "running", None, marks=(mark,)
    )
    assert podtimes.parse(kept.to_json(), "pods.json").marks == (mark,)


def test_wait_keeps_a_mark_at_each_poll_so_a_run_it_watched_splits_alike(
    run_id: str,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`wait` alone, the pods the same between most polls: each poll keeps the step the store
    shows (and the launcher's hang restart), so the ledger is the one six `status` readings
    give, not restarts counted until the job's end. The store advances as the API answers each
    poll's read of the job: no timing involved."""
    store = tmp_path / "claim"
    metrics = {"id": "mnist-baseline-01", "metas": [STEPS]}
    _written(store / RUN / "_metrics" / "metrics.json", json.dumps(metrics), "09:00:12")
    _written(store / RUN / "logs" / "master-0.log", "epoch 1\n", "09:00:40")
    hang = {"event": "restart", "reason": "hung", "time": at("09:15:00"), "exitCode": 137}
    polls = iter(READINGS)
    answer = api.answer

    def advancing(path: str) -> tuple[int, bytes]:
        reading = next(polls, None) if path == JOB_PATH else None
        if reading is not None:  # each poll reads the job first: the pods wrote before it
            _, step, when = reading
            if step == 350:
                events = store / RUN / "logs" / "worker-0.restarts.jsonl"
                _written(events, json.dumps(hang) + "\n", "09:15:00")
            _step(store, step, when)
        return answer(path)

    monkeypatch.setattr(api, "answer", advancing)
    jobs = [
        f"pytorchjob-ledger-{'running' if s != 'succeeded' else s}.json" for s, _, _ in READINGS
    ]
    api.serve(JOB_PATH, *jobs)
    api.serve(PODS_PATH, *(f"pods-ledger-{s}.json" for s, _, _ in READINGS))
    argv = ["wait", "mnist-baseline-01", "--interval", "0.1", "--store", str(store)]
    done = recorded.cli_exit(argv)
    assert done.code == 0, done.err
    kept = podtimes.parse((store / RECORD).read_text(), "pods.json")
    assert [m.step for m in kept.marks] == [None, *(float(s) for _, s, _ in READINGS)]
    project = _project(tmp_path)
    where = ["--store", str(store), "--project", str(project), "--format", "json"]
    shown = json.loads(recorded.cli_exit(["runs", "show", run_id, *where]).out)
    assert {p["part"]: p["seconds"] for p in shown["goodput"]["parts"]} == pytest.approx(EXPECTED)
