"""Whole jobs through `trainstack run --local`: real replicas, real rendezvous, real restarts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import SANDBOXES, write_run
from trainstack.registry import Registry, RunRecord, RunStatus


def _only_run(home: Path) -> RunRecord:
    with Registry.open(home) as reg:
        (record,) = reg.list()
    return record


@pytest.mark.slow  # real PyTorch replicas
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_three_pytorch_replicas_all_reduce_and_agree(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "allreduce",
        "allreduce-3",
        outputs={"result": f"file://{out}/"},
        resources={"master": {"replicas": 1}, "worker": {"replicas": 2}},
    )
    done = cli("run", spec, "--local", "--sandbox", sandbox)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))}
    assert sorted(seen) == ["rank-0.json", "rank-1.json", "rank-2.json"]
    assert {s["sum"] for s in seen.values()} == {6.0}  # 1 + 2 + 3, on every rank
    assert {s["world_size"] for s in seen.values()} == {3}
    assert seen["rank-0.json"]["env"]["MASTER_ADDR"] == "localhost"
    ports = {s["env"]["MASTER_PORT"] for s in seen.values()}
    if sandbox == "processes":
        assert seen["rank-1.json"]["env"]["MASTER_ADDR"] == "127.0.0.1"
        assert len(ports) == 1
    else:  # the master's Service name and PyTorchJob's own port, as on a cluster
        assert seen["rank-1.json"]["env"]["MASTER_ADDR"] == "allreduce-3-master-0"
        assert ports == {"23456"}
    assert f"sandbox:  {sandbox} (--sandbox {sandbox})" in done.stdout
    assert "master-0 | rank 0: all-reduce sum 6.0" in done.stdout
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert [(e.key, e.exit_code) for e in record.exits] == [
        ("master-0", 0),
        ("worker-0", 0),
        ("worker-1", 0),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_tensorflow_replicas_get_a_consistent_tf_config(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "tfcheck",
        "tf-config",
        outputs={"result": f"file://{out}/"},
        resources={"chief": {"replicas": 1}, "ps": {"replicas": 1}, "worker": {"replicas": 2}},
    )
    done = cli("run", spec, "--local", "--grace", "2", "--sandbox", sandbox)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(seen) == ["chief-0", "ps-0", "worker-0", "worker-1"]
    clusters = {json.dumps(s["tf_config"]["cluster"], sort_keys=True) for s in seen.values()}
    assert len(clusters) == 1  # every task sees the same cluster
    cluster = next(iter(seen.values()))["tf_config"]["cluster"]
    addresses = [a for role in ("chief", "ps", "worker") for a in cluster[role]]
    assert len(addresses) == 4 == len(set(addresses))
    # Processes share this machine's loopback; pods have KubeDL's Service names and TFJob's port.
    form = (
        r"127\.0\.0\.1:\d+" if sandbox == "processes" else r"tf-config-[a-z]+-\d\.default\.svc:2222"
    )
    assert all(re.fullmatch(form, a) for a in addresses), addresses
    for key, s in seen.items():
        role, index = key.rsplit("-", 1)
        assert s["tf_config"]["task"] == {"type": role, "index": int(index)}
        assert s["problems"] == []
    # The chief's success ends the job (KubeDL's TF rule); the parameter server, which never
    # exits on its own, is then stopped, and recorded as stopped rather than as a failure.
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    exits = {e.key: e for e in record.exits}
    assert exits["chief-0"].exit_code == 0
    assert exits["ps-0"].exit_code == 143 and exits["ps-0"].stopped
    assert "ps-0 exited" not in done.stdout
