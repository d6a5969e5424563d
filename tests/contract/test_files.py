"""training_job.json is the whole job without secrets; the run's env cannot shadow the contract."""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainstack.contract import ContractError, Topology, config_files, replica_env
from trainstack.spec.model import FrozenMap


def test_training_job_withholds_secret_looking_env(load):
    run = load("kinds/pytorch.run.yaml")
    run = dataclasses.replace(
        run, env=FrozenMap({"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_abc123", "DB_PASSWORD": "pw"})
    )
    text = config_files(run, Topology.cluster(run, "ns"))["training_job.json"]
    assert "hf_abc123" not in text and '"pw"' not in text
    assert json.loads(text)["env"] == {
        "NCCL_DEBUG": "INFO",
        "HF_TOKEN": "<withheld>",
        "DB_PASSWORD": "<withheld>",
    }


def test_run_env_cannot_shadow_a_contract_variable(load):
    run = load("kinds/custom.run.yaml")  # has a model named base → MODEL_BASE
    run = dataclasses.replace(run, env=FrozenMap({"MODEL_BASE": "/elsewhere"}))
    with pytest.raises(ContractError, match="MODEL_BASE is set by the contract"):
        replica_env(run, "worker", 0, topology=Topology.local(run, {}))
