"""Framework variables per kind, as KubeDL's controllers compute them, on a cluster and locally."""

from __future__ import annotations

import pytest

from trainstack.contract import ContractError, Topology, config_files, replica_env


def _fw(env):
    keys = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
    return tuple(env.get(k) for k in keys)


def test_pytorch_cluster(load):
    run = load("kinds/pytorch.run.yaml")
    top = Topology.cluster(run, "team-a")
    assert top.job_name == "torch-run"
    assert _fw(replica_env(run, "master", 0, topology=top)) == ("localhost", "23456", "4", "0")
    for i in range(3):
        env = replica_env(run, "worker", i, topology=top)
        assert _fw(env) == ("torch-run-master-0", "23456", "4", str(i + 1))


def test_pytorch_local(load):
    run = load("kinds/pytorch.run.yaml")
    top = Topology.local(run, {"master": [41000], "worker": [41001, 41002, 41003]})
    assert _fw(replica_env(run, "master", 0, topology=top)) == ("localhost", "41000", "4", "0")
    assert _fw(replica_env(run, "worker", 1, topology=top)) == ("127.0.0.1", "41000", "4", "2")


def test_xgboost_rank_is_index(load):
    # KubeDL's xgboost SetPodEnv: RANK = index in every role, MASTER_ADDR the master's Service.
    run = load("kinds/xgboost.run.yaml")
    top = Topology.cluster(run, "default")
    assert _fw(replica_env(run, "master", 0, topology=top)) == (
        "xgb-run-master-0",
        "9999",
        "3",
        "0",
    )
    assert _fw(replica_env(run, "worker", 1, topology=top)) == (
        "xgb-run-master-0",
        "9999",
        "3",
        "1",
    )


def test_mpi(load):
    run = load("kinds/mpi.run.yaml")
    top = Topology.cluster(run, "default")
    launcher = replica_env(run, "launcher", 0, topology=top)
    assert launcher["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert launcher["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/kubexec.sh"
    assert not any(k.startswith("OMPI_") for k in replica_env(run, "worker", 1, topology=top))
    local = Topology.local(run, {})
    env = replica_env(run, "launcher", 0, topology=local, root="/tmp/r/ml")
    assert env["OMPI_MCA_orte_default_hostfile"] == "/tmp/r/ml/input/config/hostfile"
    # KubeDL's hostfile lists the launcher and both workers, one slot each.
    hosts = [
        line
        for line in config_files(run, local)["hostfile"].splitlines()
        if not line.startswith("#")
    ]
    assert hosts == ["localhost slots=3"]


def test_custom_models_gpus_ports(load):
    run = load("kinds/custom.run.yaml")
    top = Topology.local(run, {}, custom_ports={"worker": [[50000, 50001], [50002, 50003]]})
    env = replica_env(run, "worker", 1, topology=top, root="/r/ml", gpus=("2", "3"))
    assert env["JOB_COMPLETION_INDEX"] == "1"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "2,3"
    assert env["MODEL"] == env["MODEL_BASE"] == "/r/ml/input/model/base/model.pt"
    assert env["MODEL_EXTRA"] == "/r/ml/input/model/extra/"
    assert env["CUSTOM_PORTS"] == "50002;50003"
    assert env["METRICS"] == "/r/ml/metrics/"
    assert "NVIDIA_VISIBLE_DEVICES" not in replica_env(run, "worker", 0, topology=top)


def test_custom_port_list_and_job_name(load):
    run = load("kinds/pytorch.run.yaml")
    env = replica_env(run, "worker", 0, topology=Topology.cluster(run, "default"))
    assert env["CUSTOM_PORTS"] == "10000;10002;10003"
    assert env["JOB_NAME"] == "torch-run"
    assert env["NCCL_DEBUG"] == "INFO"  # the run's own env


def test_bad_role_and_index(load):
    run = load("kinds/pytorch.run.yaml")
    top = Topology.cluster(run, "default")
    with pytest.raises(ContractError, match="no role 'ps'"):
        replica_env(run, "ps", 0, topology=top)
    with pytest.raises(ContractError, match="Did you mean 'worker'"):
        replica_env(run, "wrker", 0, topology=top)
    with pytest.raises(ContractError, match="index 3 is out of range"):
        replica_env(run, "worker", 3, topology=top)
    with pytest.raises(ValueError, match="3 replica"):
        Topology.local(run, {"master": [1], "worker": [2]})


def test_env_names_stable_order(load):
    run = load("seed/run.yaml")
    env = replica_env(run, "worker", 0, topology=Topology.cluster(run, "ns"))
    assert list(env)[:4] == ["PAI_WORKING_DIR", "PAI_CONFIG_DIR", "PAI_USER_ARGS", "PAI_HPS"]
