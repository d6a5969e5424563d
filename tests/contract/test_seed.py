"""The examples of Alibaba PAI Designer custom components (TF_CONFIG and the PAI_* variables),
reproduced exactly from specs loaded by the real loader."""

from __future__ import annotations

import dataclasses
import json

from trainstack.contract import Topology, config_files, replica_env
from trainstack.spec.model import FrozenMap

# PAI Designer custom components, appendix 1, with the masked `****` replaced by `xxxx` (a
# valid name).
SEED_TF_CONFIG = """
{
  "cluster": {
    "chief": ["dlc17xxxxiui3e94-chief-0.t104140334615xxxx.svc:2222"],
    "evaluator": ["dlc17xxxxiui3e94-evaluator-0.t104140334615xxxx.svc:2222"],
    "ps": ["dlc17xxxxiui3e94-ps-0.t104140334615xxxx.svc:2222"],
    "worker": [
      "dlc17xxxxiui3e94-worker-0.t104140334615xxxx.svc:2222",
      "dlc17xxxxiui3e94-worker-1.t104140334615xxxx.svc:2222",
      "dlc17xxxxiui3e94-worker-2.t104140334615xxxx.svc:2222",
      "dlc17xxxxiui3e94-worker-3.t104140334615xxxx.svc:2222"
    ]
  },
  "task": {"type": "chief", "index": 0}
}
"""
SEED_SECOND = '{"task": {"type": "worker", "index": 0}, "environment": "cloud"}'
NS = "t104140334615xxxx"


def _seed_env(load, role="chief", index=0):
    run = load("seed/run.yaml")
    return run, replica_env(run, role, index, topology=Topology.cluster(run, NS))


def test_user_args_exactly_as_seed(load):
    _, env = _seed_env(load)
    assert env["PAI_USER_ARGS"] == "--epochs 10 --batch-size 32 --learning-rate 0.001"


def test_hps_json_exactly_as_seed(load):
    run, _ = _seed_env(load)
    two = dataclasses.replace(run, parameters=FrozenMap({"epochs": 10, "batch-size": 32}))
    env = replica_env(two, "chief", 0, topology=Topology.cluster(two, NS))
    assert env["PAI_HPS"] == '{"epochs": 10, "batch-size": 32}'


def test_hps_per_parameter_as_seed(load):
    run, env = _seed_env(load)
    assert (env["PAI_HPS_EPOCHS"], env["PAI_HPS_BATCH_SIZE"]) == ("10", "32")
    # PAI Designer's `train.learning_rate` has a '.', which the spec's name rule (also from
    # PAI Designer) forbids; the contract still maps it as PAI Designer shows.
    dotted = dataclasses.replace(
        run, parameters=FrozenMap({"epochs": 10, "batch-size": 32, "train.learning_rate": 0.001})
    )
    env = replica_env(dotted, "chief", 0, topology=Topology.cluster(dotted, NS))
    assert {k: v for k, v in env.items() if k.startswith("PAI_HPS_")} == {
        "PAI_HPS_EPOCHS": "10",
        "PAI_HPS_BATCH_SIZE": "32",
        "PAI_HPS_TRAIN_LEARNING_RATE": "0.001",
    }


def test_channels_exactly_as_seed(load):
    _, env = _seed_env(load)
    assert env["PAI_INPUT_TRAIN"] == "/ml/input/data/train/"
    assert env["PAI_INPUT_TEST"] == "/ml/input/data/test/test.csv"
    assert env["PAI_OUTPUT_MODEL"] == "/ml/output/model/"
    assert env["PAI_OUTPUT_CHECKPOINTS"] == "/ml/output/checkpoints/"
    assert env["PAI_WORKING_DIR"] == "/ml/usercode/"
    assert env["PAI_CONFIG_DIR"] == "/ml/input/config/"


def test_tf_config_as_seed(load):
    _, env = _seed_env(load)
    tf = json.loads(env["TF_CONFIG"])
    seed = json.loads(SEED_TF_CONFIG)
    # KubeDL v0.5.0 (controllers/tensorflow/tensorflow.go) lists every role but the evaluator,
    # which it never runs; otherwise exactly PAI Designer's.
    del seed["cluster"]["evaluator"]
    assert tf["cluster"] == seed["cluster"]
    assert tf["task"] == seed["task"]
    assert tf["environment"] == "cloud"
    assert list(tf) == ["cluster", "task", "environment"]


def test_tf_config_task_per_replica(load):
    _, env = _seed_env(load, "worker", 3)
    assert json.loads(env["TF_CONFIG"])["task"] == {"type": "worker", "index": 3}


def test_tf_config_absent_for_one_replica(load):
    run = load("seed/run.yaml")
    single = dataclasses.replace(
        run, resources=FrozenMap({"worker": run.resources["worker"].__class__(replicas=1)})
    )
    env = replica_env(single, "worker", 0, topology=Topology.cluster(single, NS))
    assert "TF_CONFIG" not in env


def test_second_seed_example_is_elasticbatch_config(load):
    run = load("kinds/elasticbatch.run.yaml")
    top = Topology.cluster(run, "default")
    env = replica_env(run, "worker", 0, topology=top)
    assert json.loads(env["ElASTICBATCH_CONFIG"]) == json.loads(SEED_SECOND)
    assert "ElASTICBATCH_CONFIG" not in replica_env(run, "aimaster", 0, topology=top)


def test_hyperparameters_json_file(load):
    run = load("seed/run.yaml")
    files = config_files(run, Topology.cluster(run, NS))
    assert json.loads(files["hyperparameters.json"]) == {
        "epochs": 10,
        "batch-size": 32,
        "learning-rate": 0.001,
    }
    job = json.loads(files["training_job.json"])
    assert job["component"]["name"] == "seed-example"
    assert job["inputs"]["test"]["path"] == "/ml/input/data/test/test.csv"
    assert job["cluster"]["worker"][3] == "dlc17xxxxiui3e94-worker-3.t104140334615xxxx.svc:2222"
