"""What "best" means for a series: a goal metrics.json declares (`goals`, a
trainstack addition to the Octopus spec), else one its name reads as (a cost: min; a score: max),
else none — a gradient norm's "best (max)" was nonsense."""

from __future__ import annotations

import json
from pathlib import Path

from trainstack.metrics import series
from trainstack.metrics.values import Goal, values


def read(tmp: Path, meta: dict[str, object], rows: str) -> tuple[list[object], list[str]]:
    d = tmp / "run" / "metrics"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({"id": "x", "metas": [meta]}))
    (d / f"{meta['name']}.csv").write_text(rows)
    found = series.read(d, root=d.parent)
    return values(found), [p.message for p in found.problems]


def test_a_declared_goal_wins_and_an_unreadable_name_has_no_best(tmp_path: Path) -> None:
    meta = {
        "name": "step",
        "x": "step",
        "ys": ["v"],
        "series": ["grad_norm", "lr", "acc"],
        "goals": {"grad_norm": "min"},
    }
    found, problems = read(tmp_path, meta, "step,grad_norm,lr,acc\n1,0.5,0.1,0.6\n2,0.2,0.01,0.7\n")
    assert problems == []
    by = {v.column: v for v in found}
    assert (by["grad_norm"].goal, by["grad_norm"].best) == (Goal.MIN, 0.2)
    assert (by["lr"].goal, by["lr"].best, by["lr"].last) == (None, None, 0.01)
    assert (by["acc"].goal, by["acc"].best) == (Goal.MAX, 0.7)


def test_a_goal_for_no_column_or_not_min_or_max_is_a_problem(tmp_path: Path) -> None:
    meta = {"name": "step", "x": "step", "ys": ["loss"], "goals": {"los": "min", "loss": "up"}}
    found, problems = read(tmp_path, meta, "step,loss\n1,0.5\n")
    assert any("goals.los" in p or "not a column of this chart" in p for p in problems), problems
    assert any('expected "min" or "max"' in p for p in problems), problems
    assert found[0].goal is Goal.MIN  # the name still reads as a cost
