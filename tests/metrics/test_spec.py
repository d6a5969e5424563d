"""The metrics spec check (docs/metrics.md) against real files: every problem named by file and
field, what is valid still read."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack.metrics import series
from trainstack.metrics.spec import Axis, load
from trainstack.metrics.values import Goal, find, values


def meta(chart: str, **fields: object) -> dict[str, object]:
    return {
        "name": chart,
        "x": "epoch",
        "ys": ["loss"],
        "series": [],
        "description": "d",
        "smooth": "false",
        "with_timestamp": "false",
        **fields,
    }


def write(d: Path, metas: object, **csvs: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps({"id": "r", "metas": metas}))
    for name, text in csvs.items():
        (d / f"{name}.csv").write_text(text)
    return d


def problems(d: Path) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in series.read(d).problems]


def test_a_valid_spec_has_no_problems_and_every_field_is_read(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        [
            meta("epoch", ys=["loss", "accuracy"], units={"loss": "nats"}),
            meta("steps", x="step", ys=["value"], series=["a", "b"], smooth="true"),
        ],
        epoch="epoch,loss,accuracy\n1,0.5,0.6\n2,0.25,0.8\n",
        steps="step,a,b\n1,1,2\n2,3,4\n",
    )
    m = series.read(d)
    assert m.problems == ()
    epoch, steps = m.charts
    assert epoch.chart.dual and epoch.chart.label("loss") == "loss (nats)"
    assert [(c.name, c.axis) for c in epoch.columns] == [
        ("loss", Axis.LEFT),
        ("accuracy", Axis.RIGHT),
    ]
    assert steps.chart.smooth and not steps.chart.dual
    assert [c.name for c in steps.columns] == ["a", "b"]
    assert list(steps.columns[1].values) == [2.0, 4.0]


def test_seven_charts_are_reported_with_their_field_and_six_are_kept(tmp_path: Path) -> None:
    metas = [meta(f"c{i}") for i in range(7)]
    d = write(tmp_path, metas, **{f"c{i}": "epoch,loss\n1,2\n" for i in range(7)})
    m = series.read(d)
    [problem] = m.problems
    assert problem.file == str(d / "metrics.json") and problem.path == "metas"
    assert "7 charts; at most 6" in problem.message
    assert len(m.charts) == 6


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        ({"series": ["a", "b", "c", "d", "e"]}, "metas[0].series", "5 names; at most 4"),
        ({"ys": ["l", "r", "z"]}, "metas[0].ys", "3 names; at most 2"),
        ({"ys": ["l", "r"], "series": ["a"]}, "metas[0].ys", "a chart with series has one y-axis"),
        ({"name": "has space"}, "metas[0].name", "expected 1-16 letters"),
        ({"name": "x" * 17}, "metas[0].name", "expected 1-16 letters"),
        ({"smooth": "yes"}, "metas[0].smooth", 'expected "true" or "false"'),
        ({"with_timestamp": "true"}, "metas[0].with_timestamp", 'only "false" is supported'),
        ({"smoth": "true"}, "metas[0].smoth", "Did you mean 'smooth'?"),
        ({"units": {"lss": "nats"}}, "metas[0].units.lss", "Did you mean 'loss'?"),
        ({"description": "d" * 65}, "metas[0].description", "at most 64"),
    ],
)
def test_each_rule_is_reported_at_its_field(
    tmp_path: Path, fields: dict[str, object], path: str, message: str
) -> None:
    d = write(tmp_path, [{**meta("c"), **fields}], c="epoch,loss\n1,2\n")
    found = problems(d)
    assert any(p == path and message in msg for p, msg in found), found


def test_duplicate_names_keep_the_first_chart(tmp_path: Path) -> None:
    d = write(tmp_path, [meta("c"), meta("c", ys=["acc"])], c="epoch,loss\n1,2\n")
    assert problems(d) == [("metas[1].name", "'c' names an earlier chart too; names are unique")]
    assert [c.chart.ys for c in series.read(d).charts] == [("loss",)]


def test_series_files_without_metrics_json_are_reported(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_text("epoch,loss\n1,2\n")
    [p] = series.read(tmp_path).problems
    assert p.file == str(tmp_path / "metrics.json")
    assert "missing, so 1 series file(s) (loss.csv) describe no chart" in p.message


def test_an_empty_directory_is_no_problem(tmp_path: Path) -> None:
    assert series.read(tmp_path).problems == ()
    assert series.read(tmp_path / "absent").problems == ()


def test_broken_json_is_located_by_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text('{"id": "r",\n "metas": [}\n')
    [p] = load(tmp_path).problems
    assert (p.line, p.column) == (2, 12) and "not valid JSON" in p.message


def test_csv_problems_name_file_line_and_column(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        [meta("a"), meta("b"), meta("c"), meta("d")],
        a="epoch,los\n1,2\n",
        b="epoch,loss\n1,2\n2,abc\n",
        c="epoch,loss\n1,2,3\n",
    )
    found = {p.file.rsplit("/", 1)[-1]: p for p in series.read(d).problems}
    assert found["a.csv"].line == 1 and "expected epoch,loss" in found["a.csv"].message
    assert (found["b.csv"].line, found["b.csv"].column) == (3, 2)
    assert "'abc' is not a number" in found["b.csv"].message
    assert found["c.csv"].line == 2 and "3 cells; expected 2" in found["c.csv"].message
    assert "no series file" in found["d.csv"].message
    assert series.read(d).charts == ()


def test_gaps_are_allowed_and_values_skip_them(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        [meta("fit", ys=["loss", "accuracy"])],
        fit="epoch,loss,accuracy\n1,0.9,0.1\n2,0.4,\n3,0.5,0.7\n4,,0.6\n",
    )
    m = series.read(d)
    assert m.problems == ()
    assert math.isnan(m.charts[0].columns[1].values[1])
    found = values(m)
    loss, acc = found
    assert (loss.goal, loss.last, loss.last_x, loss.best, loss.best_x) == (Goal.MIN, 0.5, 3, 0.4, 2)
    assert (acc.goal, acc.last, acc.best, acc.best_x, acc.points) == (Goal.MAX, 0.6, 0.7, 3, 3)
    assert find(found, "accuracy") is acc and find(found, "fit/loss") is loss
    assert find(found, "fit") is None  # two columns: the chart name alone is ambiguous


def test_the_init_scaffold_writes_the_whole_spec(tmp_path: Path, cli: Cli) -> None:
    import os
    import subprocess
    import sys

    made = cli("init", "demo", "--dir", tmp_path, timeout=60)
    assert made.code == 0, made.err
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAI_", "RANK", "TF_"))}
    subprocess.run(
        [
            sys.executable,
            str(tmp_path / "demo" / "src" / "main.py"),
            "--epochs",
            "3",
            "--train",
            str(tmp_path / "demo" / "runs" / "data" / "train"),
        ],
        env={**env, "METRICS": str(tmp_path / "m")},
        check=True,
        capture_output=True,
        timeout=60,
    )
    m = series.read(tmp_path / "m")
    assert m.problems == ()
    fit, steps = m.charts
    assert fit.chart.dual and [c.axis for c in fit.columns] == [Axis.LEFT, Axis.RIGHT]
    assert steps.chart.smooth and [c.name for c in steps.columns] == ["grad_w", "grad_b"]
    assert list(fit.x) == [1, 2, 3] and len(steps.x) == 150
