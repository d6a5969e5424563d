"""Logs that outlive the pods, read back: `trainstack logs RUN` of a deployed
run reads its pods while they exist and, once KubeDL's cleanPodPolicy or the job's TTL deleted
them, the logs the launcher shipped to the artifact store — a claim or NAS where it is mounted
here (`--store`), OSS through oss2. `--download DIR` fetches every replica's log; `--grep` and
`--system`/`--no-system` work on both. On main a run whose pods were gone had no logs at all.

Against the recorded Kubernetes API of test_cluster and a store on disk; the logs in the store
are written by the real launcher, so the writer's layout and the reader's are the same code's."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import (
    JOB_PATH,
    NS,
    PODS_PATH,
    PlatformCLI,
    RecordedAPI,
    cli_exit,
    deployed,
)
from trainstack.deploy import logstore
from trainstack.deploy.index import RunIndex, StackEntry, entry_from_tags, run_tags
from trainstack.errors import NotFoundError, UserError

api, cli, home = recorded.api, recorded.cli, recorded.home

LAUNCHER = Path(__file__).resolve().parents[2] / "trainstack" / "launcher" / "launcher.py"
STORE_URI = "pvc://trainstack-artifacts/runs/vision/mnist-baseline-01/logs/"


def _ship(folder: Path, role: str, index: int, script: str, *extra: str) -> None:
    """A replica's log as a pod leaves it: the real launcher, its --log-dir on the store."""
    env = {**os.environ, "TRAINSTACK_ROLE": role, "TRAINSTACK_REPLICA_INDEX": str(index)}
    argv = [sys.executable, "-S", str(LAUNCHER), f"--log-dir={folder}", *extra, "--"]
    subprocess.run([*argv, "sh", "-c", script], env=env, stdout=subprocess.DEVNULL, timeout=60)


def _gone(home: Path, api: RecordedAPI, outputs: dict[str, str] | None = None) -> StackEntry:
    """A deployed run whose job and pods are gone (deleted after its TTL)."""
    entry = deployed(home)
    entry = dataclasses.replace(
        entry,
        outputs={**entry.outputs, **(outputs if outputs is not None else {"logs": STORE_URI})},
    )
    RunIndex(home).put(entry)
    api.serve(PODS_PATH, "pods-none.json")  # and JOB_PATH unserved: 404, the job is gone
    return entry


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """The claim's root as mounted here, holding what two replicas' launchers shipped."""
    root = tmp_path / "claim"
    logs = root / "runs" / "vision" / "mnist-baseline-01" / "logs"
    _ship(logs, "master", 0, "echo 'rank 0 ready'; echo 'epoch 1 loss 0.9'")
    _ship(logs, "worker", 0, "echo 'rank 1 ready'; echo 'boom' >&2; exit 3")
    return root


def test_a_gone_runs_logs_are_read_from_the_store(
    home: Path, api: RecordedAPI, cli: PlatformCLI, store: Path
) -> None:
    _gone(home, api)
    done = cli_exit(["logs", "mnist-baseline-01", "--store", str(store)])
    assert done.code == 0, done.err
    assert done.out == (
        "master-0 | rank 0 ready\nmaster-0 | epoch 1 loss 0.9\n"
        "worker-0 | rank 1 ready\nworker-0 | boom\n"
    )
    one = cli_exit(["logs", "mnist-baseline-01", "--store", str(store), "--role", "worker"])
    assert one.out == "rank 1 ready\nboom\n"
    grep = cli_exit(["logs", "mnist-baseline-01", "--store", str(store), "--grep", "ready"])
    assert grep.out == "master-0 | rank 0 ready\nworker-0 | rank 1 ready\n"
    # the job and pods were asked for first: the store is read because they are gone
    assert any(p == JOB_PATH for p, _, _ in api.requests)


def test_system_lines_can_be_kept_alone_or_left_out(
    home: Path, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    root = tmp_path / "claim"
    logs = root / "runs" / "vision" / "mnist-baseline-01" / "logs"
    # a hang restart: the launcher's own [trainstack] lines between the command's
    hang = ("--hang-timeout=1", "--hang-restarts=0", "--grace=1")
    _ship(logs, "master", 0, "echo work; sleep 30", *hang)
    _gone(home, api)
    every = cli_exit(["logs", "mnist-baseline-01", "--store", str(root)]).out.splitlines()
    assert every[0] == "work" and any(ln.startswith("[trainstack] master-0 hung") for ln in every)
    quiet = cli_exit(["logs", "mnist-baseline-01", "--store", str(root), "--no-system"])
    assert quiet.out == "work\n"
    system = cli_exit(["logs", "mnist-baseline-01", "--store", str(root), "--system"])
    assert system.out and all(ln.startswith("[trainstack] ") for ln in system.out.splitlines())


def test_download_writes_every_replicas_whole_log(
    home: Path, api: RecordedAPI, cli: PlatformCLI, store: Path, tmp_path: Path
) -> None:
    _gone(home, api)
    dest = tmp_path / "got"
    done = cli_exit(["logs", "mnist-baseline-01", "--store", str(store), "--download", str(dest)])
    assert done.code == 0, done.err
    assert sorted(p.name for p in dest.iterdir()) == ["master-0.log", "worker-0.log"]
    assert (dest / "worker-0.log").read_bytes() == b"rank 1 ready\nboom\n"
    assert f"wrote {dest / 'master-0.log'}" in done.out
    refused = cli_exit(["logs", "mnist-baseline-01", "--download", str(dest), "--tail", "3"])
    assert refused.code != 0 and "--download writes whole logs" in refused.err


def test_download_from_pods_while_they_exist(
    home: Path, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    for role in ("master", "worker"):
        api.serve(
            f"/api/v1/namespaces/{NS}/pods/mnist-baseline-01-{role}-0/log",
            (200, f"{role} line\n".encode()),
        )
    dest = tmp_path / "got"
    done = cli_exit(["logs", "mnist-baseline-01", "--download", str(dest)])
    assert done.code == 0, done.err
    assert (dest / "master-0.log").read_bytes() == b"master line\n"
    assert (dest / "worker-0.log").read_bytes() == b"worker line\n"


def test_a_claim_store_needs_its_mount_and_says_so(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    _gone(home, api)
    done = cli_exit(["logs", "mnist-baseline-01"])
    assert done.code != 0
    assert STORE_URI in done.err and "--store DIR" in done.err
    assert "Traceback" not in done.err


def test_a_run_without_a_store_says_its_logs_went_with_the_pods(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    _gone(home, api, outputs={})
    done = cli_exit(["logs", "mnist-baseline-01"])
    assert done.code != 0
    assert "no pods any more" in done.err and "no artifact store" in done.err


def test_the_store_place_is_shared_through_the_stacks_tags() -> None:
    # a teammate's machine finds the run (and where its logs are) from the stack's tags alone
    from trainstack.spec import load_run

    run = load_run(Path(__file__).resolve().parents[2] / "components/mnist-ddp/runs/local.yaml")
    tags = run_tags(run, "local", {"jobName": "j", "namespace": NS, "logs": STORE_URI})
    entry = entry_from_tags("local.team-vision.mnist-local", tags, "file:///b")
    assert entry is not None and entry.outputs["logs"] == STORE_URI


# --- OSS ----------------------------------------------------------------------------------------


class DiskBucket:
    """oss2.Bucket's listing and download over a folder (the cloud cannot exist here), paged
    two keys at a time as OSS pages at max_keys."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.listed: list[str] = []

    def list_objects_v2(self, prefix: str = "", continuation_token: str = "") -> Any:
        self.listed.append(prefix)
        keys = sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())
        keys = [k for k in keys if k.startswith(prefix)]
        start = int(continuation_token or 0)
        page = keys[start : start + 2]
        return SimpleNamespace(
            object_list=[SimpleNamespace(key=k) for k in page],
            is_truncated=start + 2 < len(keys),
            next_continuation_token=str(start + 2),
        )

    def get_object_to_file(self, key: str, filename: str) -> None:
        Path(filename).write_bytes((self.root / key).read_bytes())


def test_oss_logs_are_fetched_page_by_page_and_only_replica_logs(tmp_path: Path) -> None:
    bucket_root = tmp_path / "bucket"
    logs = bucket_root / "vision" / "_logs" / "r1"
    _ship(logs, "worker", 0, "echo a")
    _ship(logs, "worker", 1, "echo b")
    (logs / "worker-1.log.1").write_bytes(b"older\n")
    (logs / "notes.txt").write_bytes(b"not a log")
    (logs / "nested").mkdir()
    (logs / "nested" / "x-0.log").write_bytes(b"not this run's")
    bucket = DiskBucket(bucket_root)
    stored = logstore.locate(
        "oss://acme-artifacts/vision/_logs/r1/", mount=None, into=tmp_path / "got", bucket=bucket
    )
    assert bucket.listed == ["vision/_logs/r1/"] * 3  # 5 keys, 2 a page
    assert sorted(p.name for p in stored.folder.iterdir()) == [
        "worker-0.log",
        "worker-1.log",
        "worker-1.log.1",
    ]


def test_oss_without_credentials_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (logstore.ACCESS_KEY_ENV, logstore.SECRET_ENV, logstore.TOKEN_ENV):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UserError) as caught:
        logstore.locate("oss://b/vision/_logs/r/", mount=None, into=tmp_path, endpoint="https://x")
    assert logstore.ACCESS_KEY_ENV in caught.value.message
    assert "team's RAM role" in (caught.value.hint or "")


def test_a_mounted_store_is_not_left_through_its_logs_path(tmp_path: Path) -> None:
    with pytest.raises(UserError):
        logstore.locate("pvc://claim/../../etc/", mount=tmp_path, into=tmp_path)
    with pytest.raises(NotFoundError) as caught:
        logstore.locate("pvc://claim/runs/none/", mount=tmp_path, into=tmp_path)
    assert "is not a folder" in caught.value.message


def test_status_lists_hang_restarts_the_launcher_recorded_in_the_store(
    home: Path, api: RecordedAPI, cli: PlatformCLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restart in place never reaches the API; the launcher records it beside the shipped log.
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus

    root = tmp_path / "claim"
    logs = root / "runs" / "vision" / "mnist-baseline-01" / "logs"
    _ship(
        logs,
        "worker",
        0,
        f"test -f {tmp_path}/again && exit 0; touch {tmp_path}/again; sleep 30",
        "--hang-timeout=1",
        "--grace=1",
        f"--events-dir={logs}",
    )
    entry = _gone(home, api)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    for _ in range(2):  # read twice, kept once
        done = cli_exit(["status", "mnist-baseline-01", "--store", str(root), "--json"])
        assert done.code == 0, done.err
    (restart,) = json.loads(done.out)["restarts"]
    assert (restart["replica"], restart["reason"], restart["counted"]) == (
        "worker-0",
        "hung",
        False,
    )
    assert "restarted in place by the launcher" in restart["detail"]
    without = cli_exit(["status", "mnist-baseline-01", "--json", "--home", str(tmp_path / "h2")])
    assert without.code != 0 or json.loads(without.out)["restarts"] == []


def test_oss_fetches_only_the_replicas_asked_for(tmp_path: Path) -> None:
    logs = tmp_path / "bucket" / "vision" / "_logs" / "r1"
    _ship(logs, "worker", 0, "echo a")
    _ship(logs, "worker", 1, "echo b")
    bucket = DiskBucket(tmp_path / "bucket")
    uri = "oss://acme-artifacts/vision/_logs/r1/"

    def one(key: str) -> bool:
        return key == "worker-1"

    stored = logstore.locate(uri, mount=None, into=tmp_path / "got", bucket=bucket, replica=one)
    assert [p.name for p in stored.folder.iterdir()] == ["worker-1.log"]
    with pytest.raises(NotFoundError) as caught:
        logstore.locate(
            uri, mount=None, into=tmp_path / "none", bucket=bucket, replica=lambda key: False
        )
    assert caught.value.hint == "its replicas: worker-0, worker-1"
