"""The example components in components/: one per job type, each with runs, all valid."""

from __future__ import annotations

from pathlib import Path

from tests.spec.clirun import trainstack
from tests.spec.specfiles import COMPONENTS
from trainstack.spec.check import validate
from trainstack.spec.model import JobType


def test_every_job_type_but_custom_has_an_example_with_runs() -> None:
    report = validate([COMPONENTS])
    assert report.ok, [d.render() for d in report.diagnostics]
    kinds = {c.job_type for c in report.components}
    assert kinds >= set(JobType) - {JobType.CUSTOM}
    for comp in report.components:
        assert comp.source is not None
        runs = [r for r in report.runs if r.component.ref == comp.ref]
        assert runs, f"{comp.ref} has no run"
        assert (comp.source.parent / "runs").is_dir()
        if comp.code is not None and comp.code.kind == "local":
            assert comp.code.path is not None and any(comp.code.path.glob("*.py"))


def test_batch_scoring_sample_runs_locally(tmp_path: Path) -> None:
    run_file = COMPONENTS / "batch-scoring" / "runs" / "local-sample.yaml"
    scores = tmp_path / "scores"
    result = trainstack("run", "--local", "--home", tmp_path / "home",
                        "--output", f"scores={scores}", run_file)
    assert result.code == 0, result.err + result.out
    rows = sorted(line for f in scores.glob("*.csv") for line in f.read_text().splitlines()[1:])
    assert [row.split(",")[0] for row in rows] == ["r1", "r2", "r3", "r4", "r5"]
    assert all(row.split(",")[2] in ("0", "1") for row in rows)
