"""The contract says what KubeDL v0.5.0 does; each of these
failed at 8f06a63."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack.contract import Topology, config_files, replica_env, tf_config
from trainstack.spec.model import FrozenMap, RoleResources

SPECS = Path(__file__).parent / "specs"


def test_xgboost_replicas_know_their_role_and_index(load):
    """RANK is the index within each role (master-0 and worker-0 are both 0), so code picks the
    one tracker by TRAINSTACK_ROLE."""
    run = load("kinds/xgboost.run.yaml")
    topo = Topology.cluster(run, "ns")
    master = replica_env(run, "master", 0, topology=topo)
    worker = replica_env(run, "worker", 0, topology=topo)
    assert master["RANK"] == worker["RANK"] == "0"
    assert (master["TRAINSTACK_ROLE"], master["TRAINSTACK_REPLICA_INDEX"]) == ("master", "0")
    assert (worker["TRAINSTACK_ROLE"], worker["TRAINSTACK_REPLICA_INDEX"]) == ("worker", "0")
    second = replica_env(run, "worker", 1, topology=topo)
    assert second["TRAINSTACK_REPLICA_INDEX"] == "1" == second["RANK"]


def test_the_aimaster_sees_what_kubedl_appends(load):
    run = load("kinds/elasticbatch.run.yaml")
    env = replica_env(run, "aimaster", 0, topology=Topology.cluster(run, "team-a"))
    assert (env["JOB_NAME"], env["NAMESPACE"], env["JOB_TYPE"]) == (
        "eb-run",
        "team-a",
        "ELASTICBATCH",
    )
    worker = replica_env(run, "worker", 1, topology=Topology.cluster(run, "team-a"))
    assert "NAMESPACE" not in worker and "JOB_TYPE" not in worker
    assert json.loads(worker["ElASTICBATCH_CONFIG"])["task"] == {"type": "worker", "index": 1}


def test_training_job_lists_only_replicas_with_a_service(load):
    """KubeDL gives a PyTorchJob's master a Service, never its workers: a worker has no address."""
    run = load("kinds/pytorch.run.yaml")
    doc = json.loads(config_files(run, Topology.cluster(run, "ns"))["training_job.json"])
    assert list(doc["cluster"]) == ["master"]
    mpi = load("kinds/mpi.run.yaml")
    doc = json.loads(config_files(mpi, Topology.cluster(mpi, "ns"))["training_job.json"])
    assert doc["cluster"] == {}  # MPIJob: no Services at all


def test_tf_config_never_lists_an_evaluator(load):
    """Even for a run built past validation (which refuses it): KubeDL's genClusterSpec skips
    the Evaluator."""
    run = load("seed/run.yaml")
    res = dict(run.resources)
    res["evaluator"] = RoleResources(replicas=1)
    with_eval = dataclasses.replace(run, resources=FrozenMap(res))
    cfg = tf_config(with_eval, "chief", 0, Topology.cluster(with_eval, "ns"))
    assert cfg is not None and "evaluator" not in json.loads(cfg)["cluster"]


def test_env_verb_marks_what_the_operator_sets(capsys):
    done = Cli().invoke("env", str(SPECS / "kinds/pytorch.run.yaml"), "--role", "worker")
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    marked = {line.split("=", 1)[0] for line in lines if line.endswith("  # set by KubeDL")}
    assert marked == {"MASTER_PORT", "MASTER_ADDR", "RANK", "PYTHONUNBUFFERED", "WORLD_SIZE"}
    done = Cli().invoke("env", str(SPECS / "kinds/custom.run.yaml"), "--format", "json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["injectedBy"] == {"JOB_COMPLETION_INDEX": "Kubernetes"}


@pytest.mark.parametrize(
    ("rel", "role"),
    [("kinds/elasticbatch.run.yaml", "aimaster"), ("kinds/mpi.run.yaml", "launcher")],
)
def test_env_verb_shows_the_operator_names_of_each_role(capsys, rel, role):
    done = Cli().invoke("env", str(SPECS / rel), "--role", role, "--format", "json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["injectedBy"] and set(doc["injectedBy"]) <= set(doc["env"])
