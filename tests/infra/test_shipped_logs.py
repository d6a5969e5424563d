"""Logs that outlive the pods: where an environment has an artifact
store, every replica that runs the command does so behind trainstack's launcher, which appends
its output (and its own `[trainstack]` lines) to `<store>/<team>/<run>/logs/<role>-<index>.log`
on the store's volume, mounted at /ml/logs/. On main a deployed run's log lived only as long as
its pod. The launcher runs for real here; the render is what `render --env` shows."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.test_outputs_persist import (
    ACK,
    KUBECONFIG_MODE,
    README_JOB,
    pod_specs,
    rendered,
    where_mounted,
)
from trainstack.errors import ConfigError
from trainstack.infra.logplace import expiring_prefix
from trainstack.spec import load_run
from trainstack.spec.model import Run

LAUNCHER = Path(__file__).resolve().parents[2] / "trainstack" / "launcher" / "launcher.py"


def test_render_for_an_environment_ships_each_replicas_log_to_the_store() -> None:
    _, manifests = rendered(README_JOB, KUBECONFIG_MODE)
    assert any(
        m["kind"] == "ConfigMap" and m["metadata"]["name"].endswith("-launcher") for m in manifests
    )
    for pod in pod_specs(manifests):
        mount, volume = where_mounted(pod, "/ml/logs")
        assert volume["persistentVolumeClaim"]["claimName"] == "trainstack-artifacts"
        assert mount["subPath"] == "runs/vision/mnist-local/logs"
        assert not mount.get("readOnly")
        command = pod["containers"][0]["command"] + pod["containers"][0].get("args", [])
        assert command[:3] == ["python3", "-S", "/ml/launcher/launcher.py"], command
        assert "--log-dir=/ml/logs/" in command
        assert "--events-dir=/ml/logs/" in command  # hang restarts recorded beside the logs
        assert "--hang-timeout" not in " ".join(command)  # no hangTimeout asked for


def _oss_paths(run: Run) -> set[str]:
    from trainstack.infra.run.rendered import for_platform

    _, manifests = for_platform(run, ACK, "ack-dev")
    return {
        m["spec"]["csi"]["volumeAttributes"]["path"]
        for m in manifests
        if m["kind"] == "PersistentVolume"
    }


def test_on_oss_logs_go_where_the_teams_lifecycle_rule_expires_them() -> None:
    # An OSS lifecycle rule selects by a literal key prefix: <team>/_logs/ (infra.logplace).
    paths = _oss_paths(load_run(README_JOB))
    assert "/runs/vision/_logs/mnist-local" in paths
    assert "/runs/vision/mnist-local/logs" not in paths
    assert expiring_prefix("vision", "runs") == "runs/vision/_logs/"


def test_keep_logs_puts_them_beside_the_runs_outputs_for_good() -> None:
    paths = _oss_paths(dataclasses.replace(load_run(README_JOB), keep_logs=True))
    assert "/runs/vision/mnist-local/logs" in paths
    assert not any("_logs" in p for p in paths)


def test_keep_logs_is_a_spec_field(tmp_path: Path) -> None:
    component = README_JOB.parent.parent / "component.yaml"
    text = README_JOB.read_text().replace("../component.yaml", str(component))
    copy = tmp_path / "keep.yaml"
    copy.write_text(text.replace("spec:\n", "spec:\n  keepLogs: true\n", 1))
    assert load_run(copy).keep_logs is True
    assert load_run(README_JOB).keep_logs is False


def test_an_unbound_output_named_logs_is_refused_where_the_logs_go() -> None:
    run = load_run(README_JOB)
    outputs = tuple(
        dataclasses.replace(c, name="logs") if c.name == "model" else c
        for c in run.component.outputs
    )
    run = dataclasses.replace(run, component=dataclasses.replace(run.component, outputs=outputs))
    from trainstack.infra.run.rendered import for_platform

    with pytest.raises(ConfigError) as caught:
        for_platform(run, KUBECONFIG_MODE, "local")
    assert "output 'logs' has no binding" in caught.value.message
    assert "where the replicas' logs go" in caught.value.message
    # on OSS without keepLogs the logs expire elsewhere (<team>/_logs/<run>/): no clash
    for_platform(run, ACK, "ack-dev")


def _launch(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TRAINSTACK_ROLE": "worker", "TRAINSTACK_REPLICA_INDEX": "1"}
    return subprocess.run(
        [sys.executable, str(LAUNCHER), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )


def test_the_launcher_tees_output_to_the_store_in_time_order(tmp_path: Path) -> None:
    store = tmp_path / "store" / "vision" / "run" / "logs"
    script = "echo one; echo two >&2; echo three; exit 4"
    done = _launch(tmp_path, f"--log-dir={store}", "--", "sh", "-c", script)
    assert done.returncode == 4
    assert done.stdout == b"one\ntwo\nthree\n"
    assert (store / "worker-1.log").read_bytes() == b"one\ntwo\nthree\n"
    # a second start of the container (restart in place) appends
    _launch(tmp_path, f"--log-dir={store}", "--", "echo", "again")
    assert (store / "worker-1.log").read_bytes().endswith(b"three\nagain\n")


def test_a_shipped_log_is_rotated_as_local_logs_are(tmp_path: Path) -> None:
    """Past --log-max-bytes the log moves to .log.1 (.1 to .2, and so on, --log-keep of them):
    renamed, not copied, so nothing between rotations is lost or written twice."""
    store = tmp_path / "logs"
    limit = 2 << 20
    printer = "import sys\nfor i in range(100000): sys.stdout.write('%08d' % i + 'x' * 91 + '\\n')"
    done = _launch(
        tmp_path,
        f"--log-dir={store}",
        f"--log-max-bytes={limit}",
        "--log-keep=2",
        "--",
        sys.executable,
        "-c",
        printer,
    )
    assert done.returncode == 0 and len(done.stdout) == 100000 * 100
    parts = [store / "worker-1.log.2", store / "worker-1.log.1", store / "worker-1.log"]
    sizes = [p.stat().st_size for p in parts]
    assert all(0 < size <= limit for size in sizes), sizes
    assert not (store / "worker-1.log.3").exists()
    kept = b"".join(p.read_bytes() for p in parts)
    # the newest rotations, oldest first, are exactly the end of what stdout saw
    assert done.stdout.endswith(kept)
    assert kept.endswith(b"%08d" % 99999 + b"x" * 91 + b"\n")


def test_a_store_that_cannot_be_written_does_not_stop_the_replica(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file")
    done = _launch(tmp_path, f"--log-dir={blocked}", "--", "echo", "ran")
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert lines[-1] == "ran"
    assert lines[0].startswith("[trainstack] cannot write ") and "the log is not kept" in lines[0]
