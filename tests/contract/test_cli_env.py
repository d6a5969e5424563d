from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainstack.cli.main import main

SPECS = Path(__file__).parent / "specs"



def test_env_verb_prints_sourceable_lines(capsys):
    main(["env", str(SPECS / "seed/run.yaml"), "--role", "worker", "--index", "1",
          "--namespace", "ns"])
    out = capsys.readouterr().out
    assert "PAI_USER_ARGS='--epochs 10 --batch-size 32 --learning-rate 0.001'\n" in out
    assert "PAI_INPUT_TEST=/ml/input/data/test/test.csv\n" in out


def test_env_verb_json_with_files(capsys):
    main(["env", str(SPECS / "kinds/pytorch.run.yaml"), "--role", "worker", "--format", "json",
          "--files"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["env"]["RANK"] == "1"
    assert doc["argv"][:2] == ["sh", "-c"]
    assert "training_job.json" in doc["files"]


def test_env_verb_user_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["env", str(SPECS / "kinds/pytorch.run.yaml"), "--role", "ps"])
    assert done.value.code == 2
    assert "no role 'ps'" in capsys.readouterr().err
