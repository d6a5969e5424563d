"""`trainstack sweep -p NAME=VALUE`: a parameter fixed for every trial, checked against the
component as a run's own value is, recorded with each trial's run; one naming a parameter the
sweep varies is one clear error. Before, `sweep` took no -p at all ("no such option")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from tests.sweep.helpers import hold_project
from trainstack.registry import Registry, RunFilter, RunStatus

SEARCH = {
    "parameters": {"lr": [0.1, 0.2]},
    "objective": {"metric": "curve/loss", "goal": "minimize"},
}


@pytest.mark.slow
def test_a_fixed_parameter_is_recorded_with_every_trial(tmp_path: Path) -> None:
    spec = hold_project(tmp_path, SEARCH, base_params={"steps": 1})
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "-p", "steps=3", "--home", home, timeout=300)
    assert res.code == 0, res.out + res.err
    with Registry.open(home) as reg:
        runs = reg.list(RunFilter(tags={"sweep": "hold-sweep"}))
    assert len(runs) == 2 and all(r.status is RunStatus.SUCCEEDED for r in runs)
    assert sorted((r.parameters["lr"], r.parameters["steps"]) for r in runs) == [
        (0.1, 3),
        (0.2, 3),
    ]
    # Each trial's run wrote three steps: the value reached the process, not only the record.
    for r in runs:
        assert r.run_dir is not None
        lines = (Path(r.run_dir) / "metrics" / "curve.csv").read_text().splitlines()
        assert len(lines) == 1 + 3, lines
    # Resumed with another fixed value, it would be another search: refused.
    res = trainstack("sweep", spec, "--local", "-p", "steps=2", "--home", home)
    assert res.code == 2 and "already exists with another search space" in res.err, res.err
    assert "-p values" in res.err


def test_a_fixed_parameter_the_sweep_varies_is_one_clear_error(tmp_path: Path) -> None:
    spec = hold_project(tmp_path, SEARCH)
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "-p", "lr=0.5", "--home", home)
    assert res.code == 2, res.out + res.err
    assert "Traceback" not in res.err
    assert "-p lr=0.5: spec.parameters.lr: the sweep varies lr" in res.err, res.err
    assert "drop -p lr, or take lr out of the sweep's spec.parameters" in res.err
    assert res.err.count("error") == 1, res.err
    assert not (home / "sweeps" / "hold-sweep").exists()  # refused before anything started


def test_a_fixed_value_is_checked_against_the_component(tmp_path: Path) -> None:
    spec = hold_project(tmp_path, SEARCH)
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "-p", "steps=1000", "--home", home)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "-p steps=1000: spec.parameters.steps" in res.err, res.err
    assert "100" in res.err  # the range's maximum
    res = trainstack("sweep", spec, "--local", "-p", "stepz=2", "--home", home)
    assert res.code == 2 and "-p stepz=2" in res.err and "steps" in res.err, res.err
    res = trainstack("sweep", spec, "--local", "-p", "steps", "--home", home)
    assert res.code == 2 and "expected NAME=VALUE" in res.err, res.err


def test_each_trial_file_takes_the_fixed_value_and_the_fingerprint_keeps_it(tmp_path: Path) -> None:
    from trainstack.spec.loader import load_sweep
    from trainstack.sweep.trialspec import trial_document

    spec = hold_project(tmp_path, SEARCH)
    sweep = load_sweep(spec, params={"steps": 4})
    doc = trial_document(sweep, 0, {"lr": 0.1})
    assert doc["spec"]["parameters"]["steps"] == 4 and doc["spec"]["parameters"]["lr"] == 0.1
    assert dict(sweep.fixed) == {"steps": 4}
    assert sweep.fingerprint() != load_sweep(spec).fingerprint()
