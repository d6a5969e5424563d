"""What a deployed run cost, from its pods' lifetimes: `status` (and `wait`) record each pod's
scheduled → ended time and requests in the artifact store beside the run's logs (`pods.json`),
and `runs show`, `runs list --cost` and the report price them as they price a local run — on the
machine that deployed it and on a teammate's, whose registry never held the run. On main a
deployed run had no resource-time at all.

Against the recorded Kubernetes API of test_cluster (tests/infra/kubeapi/pods-priced-*.json: a
worker restarted in place, then preempted and recreated) and a claim store on disk."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import JOB_PATH, PODS_PATH, PlatformCLI, RecordedAPI, deployed
from tests.deploy.test_teammates_at_scale import tags as stack_tags
from trainstack.deploy.index import RunIndex
from trainstack.metrics import podtimes

api, cli, home = recorded.api, recorded.cli, recorded.home

STORE_URI = "pvc://trainstack-artifacts/runs/vision/mnist-baseline-01/logs/"
RECORD = Path("runs/vision/mnist-baseline-01/logs") / podtimes.FILE
# 4 vCPU, 16 GiB and 1 GPU per pod; master 20 min, the preempted worker 10, its successor 10
POD_MINUTES = 40
RATES = {"currency": "CNY", "vcpuHour": 0.5, "memoryGiBHour": 0.01, "gpuHour": 6.0}
PRICE = (4 * 0.5 + 16 * 0.01 + 6.0) * POD_MINUTES / 60  # 5.44


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "platform"
    root.mkdir()
    (root / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "trainstack", "runtime": "python"}))
    config = {"trainstack:mode": "kubeconfig", "trainstack:costs": RATES}
    (root / "Pulumi.local.yaml").write_text(yaml.safe_dump({"config": config}))
    return root


@pytest.fixture
def run_id(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The run as deploy leaves it, its stack's logs output on a claim; its registry id. The
    stack half of `status` (Pulumi's history) is test_deploy's: here only the live half."""
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus
    from trainstack.registry import Registry

    entry = deployed(home)
    outputs = {**entry.outputs, "logs": STORE_URI}
    entry = dataclasses.replace(entry, outputs=outputs)
    RunIndex(home).put(entry)
    assert entry.registry_id is not None
    with Registry.open(home) as registry:
        registry.record_log_place(entry.registry_id, STORE_URI, None)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    return entry.registry_id


def _watched(api: RecordedAPI, store: Path) -> None:
    """`status` three times over the run's life: running (the worker restarted in place), the
    worker preempted and recreated, then the job done."""
    for job, pods in (
        ("pytorchjob-running.json", "pods-priced-running.json"),
        ("pytorchjob-running.json", "pods-priced-replaced.json"),
        ("pytorchjob-succeeded.json", "pods-priced-succeeded.json"),
    ):
        api.serve(JOB_PATH, job)
        api.serve(PODS_PATH, pods)
        done = recorded.cli_exit(["status", "mnist-baseline-01", "--store", str(store)])
        assert done.code == 0, done.err
        assert "warning" not in done.err


def test_status_keeps_each_pods_lifetime_beside_the_logs(
    run_id: str, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    store = tmp_path / "claim"
    _watched(api, store)
    kept = podtimes.parse((store / RECORD).read_text(), "pods.json")
    lives = {(p.uid, p.end): (p.scheduled, p.ended) for p in kept.pods}
    at = lambda hhmm: podtimes_time(f"2026-11-30T{hhmm}:00Z")  # noqa: E731
    assert lives == {
        ("pod-master-0", podtimes.TERMINATED): (at("09:00"), at("09:20")),
        # gone between two readings: it ended when its successor was scheduled
        ("pod-worker-0", podtimes.REPLACED): (at("09:00"), at("09:10")),
        ("pod-worker-0-again", podtimes.TERMINATED): (at("09:10"), at("09:20")),
    }
    assert {(p.cpu, p.memory_gib, p.gpu) for p in kept.pods} == {(4.0, 16.0, 1.0)}
    assert (kept.run, kept.stack, kept.outcome) == (
        "mnist-baseline-01",
        "local.mnist-baseline-01",
        "succeeded",
    )
    # the same sightings again write the same bytes (determinism): nothing new to merge
    before = (store / RECORD).read_bytes()
    recorded.cli_exit(["status", "mnist-baseline-01", "--store", str(store)])
    assert (store / RECORD).read_bytes() == before


def podtimes_time(text: str) -> float:
    from trainstack.deploy.recovery import parse_time

    value = parse_time(text)
    assert value is not None
    return value


def test_runs_show_list_and_report_price_a_deployed_run(
    run_id: str, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    store = tmp_path / "claim"
    _watched(api, store)
    project = _project(tmp_path)
    shown = recorded.cli_exit(
        ["runs", "show", run_id, "--store", str(store), "--project", str(project)]
    )
    assert shown.code == 0, shown.err
    line = next(ln for ln in shown.out.splitlines() if ln.startswith("cost"))
    assert "2.67 vCPU-h, 0.67 GPU-h, 10.7 GiB-h" in line
    assert f"CNY {PRICE:.2f} at local's rates" in line
    listed = recorded.cli_exit(
        [
            "runs",
            "list",
            "--cost",
            "--format",
            "json",
            "--store",
            str(store),
            "--project",
            str(project),
        ]
    )
    assert listed.code == 0, listed.err
    (row,) = json.loads(listed.out)
    assert row["cost"]["cost"] == f"CNY {PRICE:.2f}"
    page = tmp_path / "report.html"
    argv = ["report", run_id, "-o", str(page), "--store", str(store), "--project", str(project)]
    made = recorded.cli_exit(argv)
    assert made.code == 0, made.err
    html = page.read_text()
    assert f"CNY {PRICE:.2f} at local&#39;s rates" in html or f"CNY {PRICE:.2f} at local's" in html
    assert "OOMKilled" in html  # the restart in place status recorded, in its recovery table


def test_a_teammate_sees_the_cost_from_the_store_alone(
    run_id: str,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bob never deployed or watched the run: his registry and stack index are empty; the
    backend's stack tags say where its store is, the store what it cost."""
    import trainstack.deploy.workspace as workspace
    from tests.deploy.test_deploy import RecordingPulumi

    store = tmp_path / "claim"
    _watched(api, store)
    backend = RecordingPulumi()
    stack = "local.vision.mnist-baseline-01"
    backend.stacks.add(stack)
    backend.tags[stack] = {
        **stack_tags(0),
        "trainstack:run": "mnist-baseline-01",
        "trainstack:job": "mnist-baseline-01",
        "trainstack:logs": STORE_URI,
    }
    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)
    bob = tmp_path / "bob"
    bob.mkdir()
    project = _project(tmp_path)
    argv = ["runs", "show", "mnist-baseline-01", "--home", str(bob), "--project", str(project)]
    shown = recorded.cli_exit([*argv, "--store", str(store)])
    assert shown.code == 0, shown.err
    assert f"CNY {PRICE:.2f} at local's rates" in shown.out
    assert "succeeded" in shown.out
    as_json = json.loads(recorded.cli_exit([*argv, "--store", str(store), "--format", "json"]).out)
    assert as_json["cost"].startswith("2.67 vCPU-h")
    # without the claim mounted here, one clear error saying how to reach it
    unmounted = recorded.cli_exit(argv)
    assert unmounted.code != 0 and "Traceback" not in unmounted.err
    assert "no pods.json" in unmounted.err or "--store" in unmounted.err


# --- trainstack cost ----------------------------------------------------------------------------


def _bobs_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend as every teammate sees it: the run's stack and its tags."""
    import trainstack.deploy.workspace as workspace
    from tests.deploy.test_deploy import RecordingPulumi

    backend = RecordingPulumi()
    stack = "local.vision.mnist-baseline-01"
    backend.stacks.add(stack)
    backend.tags[stack] = {
        **stack_tags(0),
        "trainstack:run": "mnist-baseline-01",
        "trainstack:job": "mnist-baseline-01",
        "trainstack:logs": STORE_URI,
    }
    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)


def test_cost_rolls_up_the_shared_records_and_this_registrys_runs(
    run_id: str,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bob's registry holds one local run of his (a preemption and a hang restart); the
    deployed run is a teammate's, known to him only through the backend and the store."""
    from tests.metrics.test_goodput import _recorded_run

    store = tmp_path / "claim"
    _watched(api, store)
    _bobs_backend(monkeypatch)
    bob = tmp_path / "bob"
    bob.mkdir()
    _recorded_run(bob)  # tagged env=priced: 1 vCPU at 36/h, 1 GPU at 72/h
    project = _project(tmp_path)
    (project / "Pulumi.priced.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "trainstack:mode": "kubeconfig",
                    "trainstack:costs": {"currency": "CNY", "vcpuHour": 36.0, "gpuHour": 72.0},
                }
            }
        )
    )
    base = ["cost", "--home", str(bob), "--store", str(store), "--project", str(project)]
    done = recorded.cli_exit([*base, "--format", "json"])
    assert done.code == 0, done.err
    groups = {g["group"]: g for g in json.loads(done.out)["groups"]}
    assert set(groups) == {"vision", "-"}
    assert groups["vision"]["runs"] == 1
    assert groups["vision"]["gpu_hours"] == pytest.approx(POD_MINUTES / 60)
    assert groups["vision"]["cost"]["CNY"] == pytest.approx(PRICE)
    assert groups["-"]["runs"] == groups["-"]["priced"] == 1
    text = recorded.cli_exit([*base, "--by", "component"])
    assert text.code == 0, text.err
    heading, *rows = text.out.splitlines()
    assert heading.split()[:3] == ["COMPONENT", "RUNS", "VCPU-H"]
    assert rows[0].split()[0] == "mnist-ddp" and f"CNY {PRICE:.2f}" in rows[0]
    only = json.loads(recorded.cli_exit([*base, "--team", "vision", "--format", "json"]).out)
    assert [g["group"] for g in only["groups"]] == ["vision"]
    local = json.loads(recorded.cli_exit([*base, "--env", "priced", "--format", "json"]).out)
    assert [g["group"] for g in local["groups"]] == ["-"]
    # --goodput: each run's ledger, the local one's and the teammate's deployed one's, its
    # parts adding up to its wall time (the job's creation -> its last pod's end: 20 minutes)
    ledger = json.loads(
        recorded.cli_exit([*base, "--goodput", "--by", "run", "--format", "json"]).out
    )
    assert [g["goodput"]["runs"] for g in ledger["groups"]] == [1, 1]
    for group in ledger["groups"]:
        parts = group["goodput"]["parts"]
        assert [p["part"] for p in parts] == ["queue", "start-up", "productive", "restarts", "hang"]
        assert sum(p["seconds"] for p in parts) > 0
    deployed = next(g for g in ledger["groups"] if "mnist-baseline-01" in g["group"])
    assert sum(p["seconds"] for p in deployed["goodput"]["parts"]) == pytest.approx(20 * 60)
    assert sum(p["cost"] for p in deployed["goodput"]["parts"]) == pytest.approx(PRICE)
    # nothing watched the deployed run's accelerators: its idle time is not known, not zero
    assert deployed["goodput"]["idle_gpu_seconds"] is None
    assert deployed["goodput"]["idle_sampled_runs"] == 0
    local_run = next(g for g in ledger["groups"] if g is not deployed)
    assert local_run["goodput"]["idle_gpu_seconds"] is not None
    shown = recorded.cli_exit([*base, "--goodput", "--by", "run"]).out
    assert "not known" in next(line for line in shown.splitlines() if "mnist-baseline-01" in line)


def test_cost_refuses_a_bad_since_or_grouping_with_one_clear_error(
    home: Path, tmp_path: Path
) -> None:
    since = recorded.cli_exit(["cost", "--since", "last tuesday"])
    assert since.code != 0 and "Traceback" not in since.err
    assert "--since 'last tuesday': expected a duration such as 30m, 2h or 7d" in since.err
    by = recorded.cli_exit(["cost", "--by", "person"])
    assert by.code != 0 and "Traceback" not in by.err
    assert "'person' is not one of 'team', 'experiment', 'component', 'run'" in by.err


def test_wait_keeps_the_lifetimes_at_each_change(
    run_id: str, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    """`wait` reads the pods at each poll and keeps them at each change, so the preempted
    worker, gone by the end, is in the record as `status` would have left it."""
    api.serve(
        JOB_PATH, "pytorchjob-running.json", "pytorchjob-running.json", "pytorchjob-succeeded.json"
    )
    api.serve(
        PODS_PATH,
        "pods-priced-running.json",
        "pods-priced-replaced.json",
        "pods-priced-succeeded.json",
    )
    store = tmp_path / "claim"
    argv = ["wait", "mnist-baseline-01", "--interval", "0.1", "--store", str(store)]
    done = recorded.cli_exit(argv)
    assert done.code == 0, done.err
    kept = podtimes.parse((store / RECORD).read_text(), "pods.json")
    assert sorted(p.end or "" for p in kept.pods) == [
        podtimes.REPLACED,
        podtimes.TERMINATED,
        podtimes.TERMINATED,
    ]
    assert sum(p.seconds for p in kept.pods) == POD_MINUTES * 60


def test_a_damaged_record_is_one_clear_error(
    run_id: str, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    store = tmp_path / "claim"
    (store / RECORD).parent.mkdir(parents=True)
    (store / RECORD).write_text('{"version": 1, "run": "x", "pods": [{"index": -1}]}')
    done = recorded.cli_exit(["runs", "show", run_id, "--store", str(store)])
    assert done.code != 0 and "Traceback" not in done.err
    assert f"{STORE_URI}{podtimes.FILE}: outcome: expected one of pending" in done.err
    # the listing goes on, the run unpriced, the problem said
    listed = recorded.cli_exit(["runs", "list", "--cost", "--store", str(store)])
    assert listed.code == 0, listed.err
    assert "warning: mnist-baseline-01: " in listed.err


class _WritableBucket:
    """oss2.Bucket's listing, download and upload over a folder (the cloud cannot exist here)."""

    def __init__(self, root: Path) -> None:
        from tests.deploy.test_logs_after_pods import DiskBucket

        self.disk = DiskBucket(root)
        self.root = root

    def list_objects_v2(self, prefix: str = "", continuation_token: str = "") -> object:
        return self.disk.list_objects_v2(prefix, continuation_token)

    def get_object_to_file(self, key: str, filename: str) -> None:
        self.disk.get_object_to_file(key, filename)

    def put_object(self, key: str, data: bytes) -> None:
        (self.root / key).parent.mkdir(parents=True, exist_ok=True)
        (self.root / key).write_bytes(data)


def test_an_oss_store_is_written_and_read_through_the_sdk(
    home: Path,
    api: RecordedAPI,
    cli: PlatformCLI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy import logstore, service
    from trainstack.deploy.service import StackStatus
    from trainstack.registry import Registry

    uri = "oss://team-bucket/vision/_logs/mnist-baseline-01/"
    entry = deployed(home)
    entry = dataclasses.replace(entry, outputs={**entry.outputs, "logs": uri, "region": "cn-x"})
    RunIndex(home).put(entry)
    assert entry.registry_id is not None
    with Registry.open(home) as registry:
        registry.record_log_place(entry.registry_id, uri, "cn-x")
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(entry, "update", "succeeded", None, {}),
    )
    bucket = _WritableBucket(tmp_path / "bucket")
    monkeypatch.setattr(logstore, "_oss_bucket", lambda name, endpoint: bucket)
    api.serve(JOB_PATH, "pytorchjob-succeeded.json")
    api.serve(PODS_PATH, "pods-priced-succeeded.json")
    # without credentials in the environment nothing is written, and status still works
    assert recorded.cli_exit(["status", "mnist-baseline-01"]).code == 0
    assert not (tmp_path / "bucket").exists()
    monkeypatch.setenv(logstore.ACCESS_KEY_ENV, "id")
    monkeypatch.setenv(logstore.SECRET_ENV, "secret")
    assert recorded.cli_exit(["status", "mnist-baseline-01"]).code == 0
    key = tmp_path / "bucket" / "vision" / "_logs" / "mnist-baseline-01" / podtimes.FILE
    assert podtimes.parse(key.read_text(), "pods.json").outcome == "succeeded"
    shown = recorded.cli_exit(["runs", "show", entry.registry_id])
    assert shown.code == 0, shown.err
    assert "2.00 vCPU-h, 0.50 GPU-h" in shown.out  # two pods of 4 vCPU and 1 GPU: 20 + 10 min
