"""`-p NAME=VALUE` on `run`, `plan` and `deploy`: one parameter changed without a new run file,
checked against the component's types and ranges exactly as the file's own value is (a bad one is
said of its `-p`, not of a line of the file), and recorded with the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.errors import SpecError, UserError
from trainstack.registry import Registry
from trainstack.spec import load_run, overrides

REPO = Path(__file__).resolve().parents[2]
MNIST = REPO / "components/mnist-ddp/runs/local.yaml"


def test_values_are_read_as_yaml_scalars() -> None:
    got = overrides.parse(["epochs=5", "lr=0.1", "amp=true", "optimizer=sgd", "note=a=b", "x="])
    assert dict(got) == {
        "epochs": 5,
        "lr": 0.1,
        "amp": True,
        "optimizer": "sgd",
        "note": "a=b",
        "x": "",
    }
    assert overrides.parse(["l=[1, 2]"])["l"] == "[1, 2]"  # not a scalar: the text as given
    for bad in ("epochs", "=3", "two words=1"):
        with pytest.raises(UserError, match="expected NAME=VALUE"):
            overrides.parse([bad])


def test_an_override_is_loaded_and_checked_as_the_files_value_would_be() -> None:
    run = load_run(MNIST, params=overrides.parse(["epochs=7", "optimizer=sgd"]))
    assert run.parameters["epochs"] == 7 and run.parameters["optimizer"] == "sgd"
    assert load_run(MNIST).parameters["epochs"] == 3  # the file is untouched
    for given, words in (
        ("epochs=0", "epochs"),  # below the range's min of 1
        ("epochs=many", "epochs"),  # not an Int
        ("optimizer=lbfgs", "optimizer"),  # not one of the enum
        ("nosuch=1", "nosuch"),  # not a parameter of the component
    ):
        with pytest.raises(SpecError) as caught:
            load_run(MNIST, params=overrides.parse([given]))
        (diag,) = caught.value.diagnostics()
        assert diag.file == f"-p {given}" and diag.line is None, diag
        assert words in diag.path or words in diag.message, diag


def test_plan_renders_the_overridden_value(cli: Cli) -> None:
    done = cli("plan", str(MNIST), "--env", "local", "-p", "epochs=9", "--json")
    assert done.code == 0, done.err
    (job,) = [
        r["inputs"]
        for r in json.loads(done.out)["resources"]
        if r["inputs"].get("kind") == "PyTorchJob"
    ]
    assert "--epochs 9" in json.dumps(job)
    bad = cli("plan", str(MNIST), "--env", "local", "-p", "epochs=0")
    assert bad.code == 2 and bad.err.startswith("error: -p epochs=0: spec.parameters.epochs")


@pytest.mark.slow
def test_a_local_run_runs_with_and_records_the_overridden_value(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path, "probe", "counted", parameters={"mode": "count", "steps": 2, "seconds": 0.01}
    )
    done = cli("run", str(spec), "--local", "-p", "steps=4", "--no-install")
    assert done.code == 0, done.err
    with Registry.open(cli.home) as reg:
        record = reg.resolve("counted")
    assert record.parameters["steps"] == 4
    assert record.run_dir is not None
    assert (record.run_dir / "output" / "state" / "count").read_text() == "4"
