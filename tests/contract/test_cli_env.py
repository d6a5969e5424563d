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
    assert doc["argv"][:2] == ["sh", "-c"]
    assert "training_job.json" in doc["files"]


def test_env_verb_user_error(capsys):
    done = Cli().invoke("env", str(SPECS / "kinds/pytorch.run.yaml"), "--role", "ps")
    assert done.code == 2
    assert "no role 'ps'" in done.err
