"""docs/kubedl.md's per-kind table says the start order KubeDL v0.5.0's DAG conditions give, as
the model (`Role.starts_after`) does: it said "none" for TF (chief, master and
workers wait for the PS: apis/training/v1alpha1/tfjob_defaults.go:75-101) and XGBoost (workers
wait for the master: xgboostjob_defaults.go:91-102), and kinds.py's XGBoost comment said so too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainstack.kubedl import KINDS, JobType

ROOT = Path(__file__).resolve().parents[2]


def _rows() -> dict[str, dict[str, str]]:
    lines = (ROOT / "docs" / "kubedl.md").read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("| kind | roles"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0].split(" ")[0]] = dict(zip(header, cells, strict=False))
    return rows


@pytest.mark.parametrize("job_type", list(JobType))
def test_the_start_order_column_follows_the_model(job_type: JobType) -> None:
    cell = _rows()[job_type.value]["start order"].lower()
    waits = [(r.name, r.starts_after) for r in KINDS[job_type].roles if r.starts_after]
    if not waits:
        assert cell == "none"
        return
    assert cell != "none"
    for role, upstream in waits:
        assert role in cell and upstream in cell, (job_type, role, upstream, cell)


def test_kinds_comments_do_not_deny_a_start_order() -> None:
    assert "no start order" not in (ROOT / "trainstack" / "kubedl" / "kinds.py").read_text()
