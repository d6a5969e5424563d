"""`run --local --env ENV` for an environment whose operator is Kubeflow Trainer runs the run as
its TrainJob's nodes and fails as the JobSet of trainstack's runtimes does
(trainstack.trainer.restart): a failed node restarts every node, the whole set, up to the
runtime's maxRestarts; the run succeeds once every node has exited 0; every node gets the torch
plugin's PET_* variables with its rank, and in the sandbox JobSet's hostname. Without --env the
same run keeps KubeDL's semantics. Before this, `run --local` took no --env and ran every run
as KubeDL's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.local.helpers import REPO, SANDBOXES, write_run
from tests.trainer.environments import TRAINER_ENV, trainer_project
from trainstack.registry import Registry, RunRecord, RunStatus
from trainstack.trainer.restart import RUNTIME_MAX_RESTARTS

NODES = {"master": {"replicas": 1}, "worker": {"replicas": 2}}


def _only_run(home: Path) -> RunRecord:
    with Registry.open(home) as reg:
        (record,) = reg.list()
    return record


def _run(
    tmp_path: Path, cli: Cli, mode: str, *extra: str, name: str = "nodes", failing: int = 1
) -> tuple[Path, Any]:
    """Run the node probe on `kind-trainer`: its result folder and how the CLI ended."""
    project = trainer_project(tmp_path / "project")
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "nodeprobe",
        name,
        parameters={"mode": mode, "failing": failing},
        outputs={"result": f"file://{out}/", "state": f"file://{tmp_path / 'state'}/"},
        resources=NODES,
    )
    done = cli("run", spec, "--local", "--env", TRAINER_ENV, "--project", project, *extra)
    return out, done


def _starts(out: Path) -> dict[int, list[str]]:
    return {
        int(p.name.rsplit("-", 1)[1]): p.read_text().splitlines()
        for p in sorted(out.glob("starts-*"))
    }


@pytest.mark.slow
def test_a_failing_node_restarts_every_node_up_to_the_runtimes_max_then_fails(
    tmp_path: Path, cli: Cli
) -> None:
    out, done = _run(tmp_path, cli, "fail", "--sandbox", "processes")
    assert done.returncode != 0, done.stdout + done.stderr
    attempts = RUNTIME_MAX_RESTARTS + 1
    # Every node, not only the failing one, started once per attempt of the set.
    assert {rank: len(lines) for rank, lines in _starts(out).items()} == dict.fromkeys(
        range(3), attempts
    )
    record = _only_run(cli.home)
    assert record.status is RunStatus.FAILED
    assert record.restarts == RUNTIME_MAX_RESTARTS
    assert "node-1 exited with exit code 1" in (record.reason or "")
    assert "no restarts left" in (record.reason or "")
    assert f"failurePolicy.maxRestarts {RUNTIME_MAX_RESTARTS}" in (record.reason or "")
    assert [e.key for e in record.exits] == ["node-0", "node-1", "node-2"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "failing", "code"),
    [
        ("fail-once", 1, 1),  # a worker
        ("fail-once", 0, 1),  # the master: no rule tells them apart
        ("killed-once", 2, 137),  # SIGKILL, as an OOM kill or a lost node ends it
    ],
)
def test_a_node_that_fails_once_restarts_the_set_even_nodes_that_succeeded(
    tmp_path: Path, cli: Cli, mode: str, failing: int, code: int
) -> None:
    out, done = _run(tmp_path, cli, mode, "--sandbox", "processes", failing=failing)
    assert done.returncode == 0, done.stdout + done.stderr
    # the other nodes had exited 0 before this one failed: JobSet recreates their Jobs too
    assert {rank: len(lines) for rank, lines in _starts(out).items()} == {0: 2, 1: 2, 2: 2}
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert record.restarts == 1
    with Registry.open(cli.home) as reg:
        (restart,) = reg.restarts(record.id)
    assert (restart.key, restart.exit_code, restart.counted) == (f"node-{failing}", code, True)
    assert f"restart 1 of 3: node-{failing} exited with" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_every_node_gets_the_torch_plugins_env_with_its_rank(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out, done = _run(tmp_path, cli, "succeed", "--sandbox", sandbox, name="pet")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {rank: json.loads((out / f"environ-{rank}.json").read_text()) for rank in range(3)}
    for rank, env in seen.items():
        assert env["TRAINSTACK_ROLE"] == "node"
        assert env["TRAINSTACK_REPLICA_INDEX"] == str(rank)
        assert env["PET_NODE_RANK"] == env["RANK"] == str(rank)
        assert env["PET_NNODES"] == env["WORLD_SIZE"] == "3"
        assert env["PET_NPROC_PER_NODE"] == "auto"  # no resourcesPerNode: numProcPerNode's own
        assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"]
        assert env["MASTER_PORT"] == env["PET_MASTER_PORT"]
        assert "PYTHONUNBUFFERED" not in env  # KubeDL's, not the torch plugin's
    if sandbox == "namespaces":
        for rank, env in seen.items():
            assert env["HOSTNAME"] == f"pet-node-0-{rank}"  # JobSet's pod hostname
            assert env["PET_MASTER_ADDR"] == "pet-node-0-0.pet"
            assert env["PET_MASTER_PORT"] == "29500"
    else:
        assert {env["PET_MASTER_ADDR"] for env in seen.values()} == {"127.0.0.1"}
    assert _starts(out) == {rank: [seen[rank]["HOSTNAME"]] for rank in range(3)}
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED and record.restarts == 0
    assert [(e.key, e.exit_code) for e in record.exits] == [
        ("node-0", 0),
        ("node-1", 0),
        ("node-2", 0),
    ]


@pytest.mark.slow
def test_without_env_the_same_run_keeps_kubedls_semantics(tmp_path: Path, cli: Cli) -> None:
    """No faultTolerance on KubeDL: restartPolicy Never, the first failure fails the run."""
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "nodeprobe",
        "kubedl",
        parameters={"mode": "fail-once"},
        outputs={"result": f"file://{out}/"},
        resources=NODES,
    )
    done = cli("run", spec, "--local", "--sandbox", "processes")
    assert done.returncode != 0
    record = _only_run(cli.home)
    assert record.status is RunStatus.FAILED and record.restarts == 0
    assert [e.key for e in record.exits] == ["master-0", "worker-0", "worker-1"]


def test_a_run_trainer_cannot_run_is_refused_naming_the_kubedl_environments(
    tmp_path: Path, cli: Cli
) -> None:
    project = trainer_project(tmp_path / "project")
    spec = Path(__file__).parents[2] / "components/census-tf/runs/ps-4-workers.yaml"
    done = cli("run", spec, "--local", "--env", TRAINER_ENV, "--project", project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot run a tensorflow job" in done.stderr
    assert "environments that can run it (operator kubedl): ack-dev, local" in done.stderr
    with Registry.open(cli.home) as reg:
        assert reg.list() == []


@pytest.mark.slow
def test_mnist_ddp_trains_on_a_trainer_environment(tmp_path: Path, cli: Cli) -> None:
    """The shipped component, unchanged, trains as the TrainJob's three nodes: its
    init_process_group reads the MASTER_*/RANK/WORLD_SIZE the rendered command exports from
    the torch plugin's PET_* variables."""
    project = trainer_project(tmp_path / "project")
    model = tmp_path / "model"
    spec = write_run(
        tmp_path,
        REPO / "components" / "mnist-ddp",
        "mnist-trainer",
        parameters={"epochs": 1, "samples": 256, "batch-size": 32},
        resources={
            "master": {"replicas": 1, "cpu": 1, "memory": "2Gi"},
            "worker": {"replicas": 2, "cpu": 1, "memory": "2Gi"},
        },
        outputs={"model": f"file://{model}/"},
    )
    done = cli("run", spec, "--local", "--no-install", "--env", TRAINER_ENV, "--project", project)
    assert done.returncode == 0, done.stdout + done.stderr
    record = _only_run(cli.home)
    assert record.status is RunStatus.SUCCEEDED
    assert [(e.key, e.exit_code) for e in record.exits] == [
        ("node-0", 0),
        ("node-1", 0),
        ("node-2", 0),
    ]
    assert any(model.iterdir()), "no model written"
