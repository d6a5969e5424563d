"""spec.secretEnv in the contract: names and Secret references only, never a value."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack.contract import (
    ContractError,
    Topology,
    config_files,
    replica_env,
    run_base_env,
    secret_env_text,
)
from trainstack.spec.model import FrozenMap, Run, SecretRef

SPECS = Path(__file__).parent / "specs"
REFS = FrozenMap(
    {"HF_TOKEN": SecretRef("hf-token", "token"), "WANDB_API_KEY": SecretRef("wandb", "api-key")}
)


def _with_secrets(run: Run) -> Run:
    return dataclasses.replace(run, secret_env=REFS)


def test_replica_env_has_no_secret_env_names(load):
    run = _with_secrets(load("kinds/pytorch.run.yaml"))
    env = replica_env(run, "worker", 0, topology=Topology.cluster(run, "ns"))
    assert "HF_TOKEN" not in env and "WANDB_API_KEY" not in env


def test_training_job_lists_names_and_references(load):
    run = _with_secrets(load("kinds/pytorch.run.yaml"))
    job = json.loads(config_files(run, Topology.cluster(run, "ns"))["training_job.json"])
    assert job["secretEnv"] == {
        "HF_TOKEN": {"secret": "hf-token", "key": "token"},
        "WANDB_API_KEY": {"secret": "wandb", "key": "api-key"},
    }
    assert "HF_TOKEN" not in job["env"]


def test_secret_env_text(load):
    run = _with_secrets(load("kinds/custom.run.yaml"))
    assert secret_env_text(run) == {
        "HF_TOKEN": "<from secret hf-token/token>",
        "WANDB_API_KEY": "<from secret wandb/api-key>",
    }


def test_a_secret_env_name_cannot_shadow_a_contract_variable(load):
    run = load("kinds/custom.run.yaml")  # has a model named base → MODEL_BASE
    run = dataclasses.replace(run, secret_env=FrozenMap({"MODEL_BASE": SecretRef("s", "k")}))
    with pytest.raises(ContractError, match="secretEnv MODEL_BASE is set by the contract"):
        replica_env(run, "worker", 0, topology=Topology.local(run, {}))
    with pytest.raises(ContractError, match="secretEnv MODEL_BASE is set by the contract"):
        run_base_env(run, job_name="custom-run")


def test_a_secret_env_name_cannot_shadow_what_kubedl_sets(load):
    run = load("kinds/pytorch.run.yaml")
    run = dataclasses.replace(run, secret_env=FrozenMap({"RANK": SecretRef("s", "k")}))
    with pytest.raises(ContractError, match="secretEnv RANK is set by KubeDL"):
        run_base_env(run, job_name="x")


def _secret_run(tmp_path: Path) -> Path:
    spec = tmp_path / "run.yaml"
    spec.write_text(f"""apiVersion: trainstack.dev/v1
kind: Run
metadata: {{name: secrets}}
spec:
  component: {SPECS / "kinds/pytorch.component.yaml"}
  env: {{WANDB_PROJECT: resnet}}
  secretEnv: {{WANDB_API_KEY: wandb/api-key, HF_TOKEN: hf-token/token}}
""")
    return spec


def test_env_verb_shows_where_each_secret_comes_from(tmp_path, capsys):
    done = Cli().invoke("env", str(_secret_run(tmp_path)))
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert "WANDB_PROJECT=resnet" in lines
    # Comments, so sourcing the output never sets a placeholder as the value.
    assert lines[-2:] == [
        "# HF_TOKEN=<from secret hf-token/token>",
        "# WANDB_API_KEY=<from secret wandb/api-key>",
    ]


def test_env_verb_json(tmp_path, capsys):
    done = Cli().invoke("env", str(_secret_run(tmp_path)), "--format", "json", "--files")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["secretEnv"] == {
        "HF_TOKEN": "<from secret hf-token/token>",
        "WANDB_API_KEY": "<from secret wandb/api-key>",
    }
    assert "HF_TOKEN" not in doc["env"]
    job = json.loads(doc["files"]["training_job.json"])
    assert job["secretEnv"]["HF_TOKEN"] == {"secret": "hf-token", "key": "token"}
