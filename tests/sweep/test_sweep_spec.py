"""`kind: Sweep` through the spec loader: schema, did-you-mean, file:line:col, exit 2; the search
space against the component's parameters, ranges and types; an inline base run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from trainstack.errors import SpecError
from trainstack.spec.loader import load_sweep
from trainstack.spec.sweepmodel import Algorithm, Choice, Goal, Pick, Range

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"
HEAD = """apiVersion: trainstack.dev/v1
kind: Sweep
metadata:
  name: s1
spec:
"""


def sweep_file(tmp_path: Path, body: str) -> Path:
    """A sweep in a copy of mnist-ddp, next to its runs (so `run:` can name them)."""
    root = tmp_path / "mnist-ddp"
    if not root.exists():
        shutil.copytree(REPO / "components" / "mnist-ddp", root)
    path = root / "sweeps" / "s.yaml"
    path.write_text(HEAD + body)
    return path


@pytest.fixture
def cleanup(tmp_path: Path) -> Path:
    return tmp_path


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_sweep(path)
    return [d.render() for d in err.value.diagnostics()]


def test_the_example_loads_as_a_2x2_grid() -> None:
    s = load_sweep(EXAMPLE)
    assert s.algorithm is Algorithm.GRID and s.trial_count == 4 and s.budget.parallel == 2
    assert s.space["lr"] == Choice((0.01, 0.001))
    assert s.space["optimizer"] == Choice(("adam", "sgd"))
    assert (s.objective.metric, s.objective.goal, s.objective.pick) == (
        "epoch/accuracy",
        Goal.MAXIMIZE,
        Pick.LAST,
    )
    assert s.base.component.name == "mnist-ddp"


def test_an_unknown_parameter_is_refused_with_its_line_and_a_suggestion(cleanup: Path) -> None:
    sweep_file(
        cleanup,
        """  run: ../runs/sweep-base.yaml
  parameters:
    lr: [0.1, 0.01]
    optimiser: [adam, sgd]
  objective: {metric: epoch/accuracy, goal: maximize}
""",
    )
    res = trainstack(
        "sweep", "mnist-ddp/sweeps/s.yaml", "--local", "--home", cleanup / "home", cwd=cleanup
    )
    assert res.code == 2
    # line 9, column 5: the key `optimiser`
    assert (
        "mnist-ddp/sweeps/s.yaml:9:5: spec.parameters.optimiser: component "
        "mnist-ddp@1.2.1 has no parameter 'optimiser'" in res.err
    )
    assert "did you mean 'optimizer'?" in res.err
    assert not (cleanup / "home" / "sweeps").exists()  # nothing started, nothing stored


def test_values_and_ranges_are_checked_against_the_component(cleanup: Path) -> None:
    path = sweep_file(
        cleanup,
        """  run: ../runs/sweep-base.yaml
  algorithm: tpe
  parameters:
    lr: {min: 0.001, max: 2.0, log: true}
    optimizer: [adam, adamw]
    epochs: {min: 1.5, max: 3}
    amp: {min: 0, max: 1}
    batch-size: [32, 32]
  objective: {metric: epoch/accuracy, goal: maximize}
""",
    )
    found = problems(path)
    text = "\n".join(found)
    assert (
        ":9:" in text and "spec.parameters.lr.max: 2.0 is out of range: must be at most 1.0" in text
    )
    assert "spec.parameters.optimizer[1]: 'adamw' is not one of: 'adam', 'sgd'" in text
    assert "did you mean 'adam'?" in text
    assert "spec.parameters.epochs.min: expected an integer (Int), got 1.5" in text
    assert "spec.parameters.amp: a range needs an Int or Float parameter; this one is Bool" in text
    assert "spec.parameters.batch-size[1]: 32 is listed twice" in text


def test_a_grid_takes_lists_and_a_log_range_starts_above_zero(cleanup: Path) -> None:
    path = sweep_file(
        cleanup,
        """  run: ../runs/sweep-base.yaml
  parameters:
    lr: {min: 0.0, max: 0.1, log: true}
  objective: {metric: epoch/accuracy, goal: maximize}
""",
    )
    assert any("a grid search takes a list of values" in p for p in problems(path))
    path.write_text(path.read_text().replace("  parameters:", "  algorithm: random\n  parameters:"))
    assert any(
        "spec.parameters.lr.min: a log-scale range must start above 0" in p for p in problems(path)
    )


def test_schema_errors_speak_like_every_spec(cleanup: Path) -> None:
    path = sweep_file(
        cleanup,
        """  run: ../runs/sweep-base.yaml
  parameters: {lr: [0.1]}
  objective: {metric: epoch/accuracy, goal: maximise}
  algorith: tpe
  budget: {trials: 0, paralel: 2}
""",
    )
    text = "\n".join(problems(path))
    assert "spec.objective.goal: 'maximise' is not one of: minimize, maximize" in text
    assert "did you mean 'maximize'?" in text
    assert "unknown field 'algorith'" in text and "did you mean 'algorithm'?" in text
    assert "spec.budget.trials: 0 is out of range: must be at least 1" in text
    assert "did you mean 'parallel'?" in text


def test_a_missing_or_invalid_base_run_is_reported(cleanup: Path) -> None:
    path = sweep_file(
        cleanup,
        """  run: ../runs/nope.yaml
  parameters: {lr: [0.1]}
  objective: {metric: epoch/accuracy, goal: maximize}
""",
    )
    assert any("spec.run: run file '../runs/nope.yaml' not found" in p for p in problems(path))


def test_an_inline_run_is_checked_as_a_run_at_its_place_in_the_sweep(cleanup: Path) -> None:
    path = sweep_file(
        cleanup,
        """  run:
    component: ../component.yaml
    parameters: {epochs: 1, samples: 64}
    resources: {master: {replicas: 1, cpu: 1, memory: 1Gi}}
  parameters:
    lr: {min: 0.001, max: 0.1, log: true}
    batch-size: {min: 16, max: 128}
  algorithm: random
  seed: 7
  budget: {trials: 3}
  objective: {metric: epoch/loss, goal: minimize, value: best}
""",
    )
    s = load_sweep(path)
    assert s.space["lr"] == Range(0.001, 0.1, True, False)
    assert s.space["batch-size"] == Range(16, 128, False, True)
    assert s.base.parameters["epochs"] == 1 and s.trial_count == 3
    path.write_text(path.read_text().replace("epochs: 1,", "epochz: 1,"))
    found = problems(path)
    assert any(
        ":8:18: spec.run.parameters.epochz: component mnist-ddp@1.2.1 has no parameter" in p
        for p in found
    ), found


def test_validate_accepts_the_example_and_schema_prints_the_sweep_schema() -> None:
    res = trainstack("validate", "components/mnist-ddp")
    assert res.code == 0, res.err
    assert "1 sweep(s) valid" in res.out
    res = trainstack("schema", "sweep")
    assert res.code == 0
    schema = json.loads(res.out)
    assert schema["properties"]["kind"]["enum"] == ["Sweep"]
    assert "objective" in schema["properties"]["spec"]["required"]


def test_fastcheck_agrees_with_cerberus_on_sweeps() -> None:
    from trainstack.spec import fastcheck
    from trainstack.spec.structure import build_validator
    from trainstack.yamlsource import load

    v = build_validator("Sweep", trusted=False)
    doc = load(EXAMPLE).data
    mutations = [
        doc,
        {**doc, "spec": {**doc["spec"], "algorithm": "bayes"}},
        {**doc, "spec": {**doc["spec"], "budget": {"trials": "4"}}},
        {**doc, "spec": {**doc["spec"], "parameters": {"lr": 0.1}}},
        {**doc, "spec": {**doc["spec"], "seed": -1}},
    ]
    for m in mutations:
        assert fastcheck.valid(m, "Sweep") == v.validate(m, normalize=False), m


def test_a_grid_too_large_to_build_is_refused_at_validate(cleanup: Path) -> None:
    """Three parameters of 1,000 values passed validate, then `sweep --local` and `plan SWEEP`
    died of MemoryError building the product (optuna's GridSampler takes every point at once).
    The points are counted, never built."""
    thousand = lambda lo: "[" + ", ".join(str(lo + i) for i in range(1000)) + "]"  # noqa: E731
    path = sweep_file(
        cleanup,
        f"""  run: ../runs/sweep-base.yaml
  parameters:
    epochs: {thousand(1)}
    batch-size: {thousand(1)}
    samples: {thousand(64)}
  objective: {{metric: epoch/accuracy, goal: maximize}}
""",
    )
    found = problems(path)
    assert any(
        "spec.parameters: a grid of 1000 × 1000 × 1000 points: at most 100,000" in p for p in found
    ), found
    done = trainstack("validate", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    path.write_text(path.read_text().replace("  parameters:", "  algorithm: random\n  parameters:"))
    assert load_sweep(path).algorithm is Algorithm.RANDOM  # sampled, never enumerated
