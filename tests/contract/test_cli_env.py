from __future__ import annotations

import json
from pathlib import Path

from tests.clirunner import Cli

SPECS = Path(__file__).parent / "specs"


def test_env_verb_prints_sourceable_lines(capsys):
    done = Cli().invoke(
        "env", str(SPECS / "seed/run.yaml"), "--role", "worker", "--index", "1", "--namespace", "ns"
    )
    assert done.code == 0, done.err
    out = done.out
    assert "PAI_USER_ARGS='--epochs 10 --batch-size 32 --learning-rate 0.001'\n" in out
    assert "PAI_INPUT_TEST=/ml/input/data/test/test.csv\n" in out


def test_env_verb_json_with_files(capsys):
    done = Cli().invoke(
        "env",
        str(SPECS / "kinds/pytorch.run.yaml"),
        "--role",
        "worker",
        "--format",
        "json",
        "--files",
    )
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["env"]["RANK"] == "1"
    # the pod's argv: the launcher as PID 1, in front of the contract's `sh -c`
    assert doc["argv"][:3] == ["python3", "-S", "/ml/launcher/launcher.py"]
    assert doc["argv"][doc["argv"].index("--") + 1 : doc["argv"].index("--") + 3] == ["sh", "-c"]
    assert "training_job.json" in doc["files"]


def test_env_verb_user_error(capsys):
    done = Cli().invoke("env", str(SPECS / "kinds/pytorch.run.yaml"), "--role", "ps")
    assert done.code == 2
    assert "no role 'ps'" in done.err


REPO = Path(__file__).resolve().parents[2]
MNIST_LOCAL = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"


def test_env_shows_every_declared_output_bound_or_not(capsys):
    """mnist-ddp's local run binds no output, and its command reads
    $PAI_OUTPUT_MODEL and $PAI_OUTPUT_CHECKPOINTS; `env` showed neither (nor did a plain render
    set them, so `--model` expanded to nothing on a cluster)."""
    done = Cli().invoke("env", str(MNIST_LOCAL), "--role", "master", "--index", "0")
    assert done.code == 0, done.err
    assert "PAI_OUTPUT_MODEL=/ml/output/model/\n" in done.out
    assert "PAI_OUTPUT_CHECKPOINTS=/ml/output/checkpoints/\n" in done.out


def test_env_shows_the_deployed_view_of_an_environment(capsys):
    done = Cli().invoke(
        "env",
        str(MNIST_LOCAL),
        "--role",
        "worker",
        "--env",
        "local",
        "--project",
        str(REPO),
        "--format",
        "json",
        "--files",
    )
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    job = json.loads(doc["files"]["training_job.json"])
    # unbound outputs go where deploy puts them: the platform's artifact store, by team
    assert job["outputs"]["model"]["uri"] == "pvc://trainstack-artifacts/vision/mnist-local/model/"
    assert doc["env"]["PAI_OUTPUT_MODEL"] == "/ml/output/model/"
    refused = Cli().invoke(
        "env", str(MNIST_LOCAL), "--env", "local", "--namespace", "x", "--project", str(REPO)
    )
    assert refused.code == 2 and "--namespace: --env local decides it" in refused.err
