"""`trainstack metrics`, `runs show|list --metric|compare` and the run summary against real runs
of a fixture component (real processes, real files, the real registry)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from tests.clirunner import Cli
from tests.metrics.conftest import charts_run

USAGE_SECONDS = "TRAINSTACK_USAGE_SECONDS"  # seconds between usage samples (default 1)


def run_ok(cli: Cli, spec: Path) -> str:
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stderr
    return done.stdout


BLUE, ORANGE = np.array([0x1F, 0x77, 0xB4]) / 255, np.array([0xFF, 0x7F, 0x0E]) / 255


def ink(png: Path) -> float:
    """Share of pixels that are not (near) white."""
    pixels = image.imread(png)[..., :3]
    return float((pixels.min(axis=2) < 0.9).mean())


def drawn(png: Path, color: np.ndarray) -> int:
    """Pixels of a line's colour (the first series is blue, the second orange)."""
    pixels = image.imread(png)[..., :3]
    return int((np.abs(pixels - color).max(axis=2) < 0.1).sum())


def _contents(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def good_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """One finished run, made once for the module: the tests that take `good` only read it
    (each run takes seconds). Its home's files, to check that no test changed them."""
    folder = tmp_path_factory.mktemp("good")
    cli = Cli(folder / "home")
    # A sample every 0.2 s and 1 s of run: a few of the usage sampler's looks.
    cli.env[USAGE_SECONDS] = "0.2"
    run_ok(cli, charts_run(folder, "good", layout="good", seconds=1.0))
    assert cli.home is not None
    return cli.home, _contents(cli.home)


@pytest.fixture
def good(good_home: tuple[Path, dict[str, bytes]]) -> Iterator[Cli]:
    """A CLI on the shared finished run; the run's files must be as they were afterwards (a
    test that wrote there would change what the next one reads)."""
    home, before = good_home
    yield Cli(home)
    assert _contents(home) == before, "a test changed the shared run's files"


@pytest.mark.slow
def test_metrics_prints_last_and_best_of_each_series(good: Cli) -> None:
    out = good("metrics", "good")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
    assert rows["epoch/loss"] == ["0.3", "4", "0.25", "3", "min", "4"]
    assert rows["epoch/accuracy"] == ["0.8", "4", "0.9", "3", "max", "4"]
    # a series whose name says nothing of its goal, and that declares none: no best (not
    # "max"); the gap is not a point
    assert rows["steps/b"] == ["0", "100", "-", "-", "-", "99"]
    assert out.stderr == ""


@pytest.mark.slow
def test_png_writes_each_chart_and_the_usage_charts(good: Cli, tmp_path: Path) -> None:
    out = good("metrics", "good", "--png", tmp_path / "png")
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert names == ["epoch.png", "steps.png", "usage-worker-0.png"]
    for name in names:
        png = tmp_path / "png" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert ink(png) > 0.02, name  # axes, lines and labels, not a blank canvas
        # Usage lines are short (a 2 s run, a few samples), chart lines long.
        assert drawn(png, BLUE) > (30 if name.startswith("usage") else 200), name
    for name in ("epoch.png", "steps.png"):  # two columns each: the second line is there too
        assert drawn(tmp_path / "png" / name, ORANGE) > 200, name
    assert image.imread(tmp_path / "png" / "epoch.png").shape[:2] == (450, 800)
    one = good("metrics", "good", "--chart", "steps", "--png", tmp_path / "one")
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["steps.png"], one.stderr


def test_csv_exports_the_series_and_the_usage(good: Cli, tmp_path: Path) -> None:
    out = good("metrics", "good", "--csv", tmp_path / "csv")
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "csv" / "epoch.csv") as fh:
        assert list(csv.reader(fh)) == [
            ["epoch", "loss", "accuracy"],
            ["1", "1", "0.5"],
            ["2", "0.5", "0.7"],
            ["3", "0.25", "0.9"],
            ["4", "0.3", "0.8"],
        ]
    steps = list(csv.reader((tmp_path / "csv" / "steps.csv").read_text().splitlines()))
    assert steps[3] == ["3", "3", ""] and len(steps) == 101
    usage = list(csv.reader((tmp_path / "csv" / "usage-worker-0.csv").read_text().splitlines()))
    assert usage[0] == ["seconds", "cpu_percent", "rss_bytes"] and len(usage) > 2
    assert all(float(row[2]) > 0 for row in usage[1:])


def test_an_unknown_chart_is_one_error_with_a_suggestion(good: Cli, tmp_path: Path) -> None:
    out = good("metrics", "good", "--chart", "step", "--png", tmp_path)
    assert out.returncode == 2
    assert "has no chart 'step'. Did you mean 'steps'?" in out.stderr
    assert "Traceback" not in out.stderr


def test_runs_show_lists_final_and_best_values(good: Cli) -> None:
    out = good("runs", "show", "good")
    lines = [" ".join(line.split()) for line in out.stdout.splitlines()]
    assert any(
        line.startswith("metrics ") and line.endswith("(charts: epoch, steps)") for line in lines
    )
    assert "metric epoch/loss: 0.3 (best 0.25 at 3, min)" in lines
    shown = json.loads(good("runs", "show", "good", "--json").stdout)
    assert {v["id"]: v["best"] for v in shown["metric_values"]}["epoch/accuracy"] == 0.9


@pytest.mark.slow
def test_summary_says_how_to_open_the_charts(tmp_path: Path, cli: Cli) -> None:
    out = run_ok(cli, charts_run(tmp_path, "sum", layout="good"))
    run_id = out.rsplit("trainstack runs show ", 1)[1].strip()
    assert "(charts: epoch, steps)" in out
    assert f"trainstack metrics {run_id} --png {run_id}-charts" in out
    assert f"trainstack report {run_id} -o {run_id}.html" in out


@pytest.mark.slow
def test_an_over_limit_spec_is_reported_and_the_run_still_succeeds(
    tmp_path: Path, cli: Cli
) -> None:
    out = run_ok(cli, charts_run(tmp_path, "over", layout="over"))
    where = "metrics/metrics.json: metas: 7 charts; at most 6 are allowed"
    assert where in out  # the run's own summary
    assert where in cli("runs", "show", "over").stdout
    shown = cli("metrics", "over")
    assert shown.returncode == 0 and where in shown.stderr
    assert "c5/y5" in shown.stdout and "c6/y6" not in shown.stdout


@pytest.mark.slow
def test_series_without_metrics_json_are_not_none_written(tmp_path: Path, cli: Cli) -> None:
    run_ok(cli, charts_run(tmp_path, "csvonly", layout="csvonly"))
    show = cli("runs", "show", "csvonly").stdout
    assert "(none written)" in show  # no chart is described …
    assert "metrics.json: missing, so 1 series file(s) (loss.csv) describe no chart" in show


@pytest.mark.slow
def test_runs_list_sorts_by_a_metric(tmp_path: Path, cli: Cli) -> None:
    run_ok(cli, charts_run(tmp_path, "half", layout="good", scale=0.5))
    run_ok(cli, charts_run(tmp_path, "full", layout="good", scale=1.0))
    run_ok(cli, charts_run(tmp_path, "none", layout="csvonly"))
    plain = [line.split()[0] for line in cli("runs", "list").stdout.splitlines()[1:]]
    assert [p.split("-")[0] for p in plain] == ["none", "full", "half"]  # newest first
    out = cli("runs", "list", "--metric", "epoch/loss").stdout.splitlines()
    assert out[0].split()[-1] == "EPOCH/LOSS"
    assert [(r.split()[0].split("-")[0], r.split()[-1]) for r in out[1:]] == [
        ("half", "0.125"),
        ("full", "0.25"),
        ("none", "-"),
    ]
    acc = cli("runs", "list", "--metric", "accuracy").stdout.splitlines()
    assert [r.split()[-1] for r in acc[1:]] == ["0.9", "0.9", "-"]


@pytest.mark.slow
def test_runs_compare_side_by_side_with_an_overlay(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_ok(cli, charts_run(tmp_path, "half", layout="good", scale=0.5))
    run_ok(cli, charts_run(tmp_path, "full", layout="good", scale=1.0))
    png = tmp_path / "overlay.png"
    out = cli("runs", "compare", "half", "full", "--overlay", "epoch/loss", "--png", png)
    assert out.returncode == 0, out.stderr
    rows = {line.split("  ")[0].strip(): " ".join(line.split()) for line in out.stdout.splitlines()}
    assert rows["param scale"] == "param scale 0.5 1.0"
    assert rows["epoch/loss"] == (
        "epoch/loss 0.15 (best 0.125 at 3, min) 0.3 (best 0.25 at 3, min)"
    )
    assert drawn(png, BLUE) > 200 and drawn(png, ORANGE) > 200  # one line per run
    bad = cli("runs", "compare", "half", "full", "--overlay", "epoch/los", "--png", png)
    assert bad.returncode == 2 and "Did you mean 'epoch/loss'?" in bad.stderr
    # each line is named by the parameter that tells the runs apart, not only its run id
    from trainstack.metrics import compare, draw
    from trainstack.metrics.runview import view
    from trainstack.registry import Registry

    drawn_lines: list[list[str]] = []

    def capture(metric: str, x_label: str, lines: list[draw.Overlay]) -> bytes:
        drawn_lines.append([line.label for line in lines])
        return b""

    assert cli.home is not None
    with Registry.open(cli.home) as reg:
        views = [view(reg.resolve(r)) for r in ("half", "full")]
    monkeypatch.setattr(draw, "overlay_png", capture)
    compare.overlay(views, "epoch/loss")
    (labels,) = drawn_lines
    assert labels == [
        f"scale=0.5 ({views[0].record.id})",
        f"scale=1.0 ({views[1].record.id})",
    ]


@pytest.mark.slow
def test_idle_replicas_are_warned_about(tmp_path: Path, cli: Cli) -> None:
    cli.env["TRAINSTACK_IDLE_SECONDS"] = "0.5"
    cli.env["TRAINSTACK_IDLE_CPU_PERCENT"] = "50"
    cli.env[USAGE_SECONDS] = "0.2"  # samples spanning more than the 0.5 s
    out = run_ok(cli, charts_run(tmp_path, "idle", layout="good", seconds=1.0))
    assert "idle:     worker-0: CPU below 50% for" in out
    shown = [" ".join(line.split()) for line in cli("runs", "show", "idle").stdout.splitlines()]
    assert any(line.startswith("idle worker-0: CPU below 50% for") for line in shown)
    cli.env["TRAINSTACK_IDLE_SECONDS"] = "3600"
    # no idle warning line (the cost row's "idle 0%" share is not one)
    rows = [" ".join(line.split()) for line in cli("runs", "show", "idle").stdout.splitlines()]
    assert not any(line.startswith("idle ") for line in rows)
    cli.env["TRAINSTACK_IDLE_SECONDS"] = "soon"
    bad = cli("runs", "show", "idle")
    assert bad.returncode == 2 and "$TRAINSTACK_IDLE_SECONDS='soon'" in bad.stderr


def test_files_that_cannot_be_written_are_one_clear_error(good: Cli, tmp_path: Path) -> None:
    run_id = "good"  # the run's name: its latest run
    (tmp_path / "afile").write_text("mine")
    for args, message in [
        (("metrics", run_id, "--png", tmp_path / "afile" / "png"), "afile is a file, not a folder"),
        (("metrics", run_id, "--csv", "/proc/nope"), "cannot write /proc/nope/"),
        (("report", run_id, "-o", "/proc/report.html"), "cannot write /proc/report.html: "),
        (("report", run_id, "-o", tmp_path / "afile" / "r.html"), "afile is a file, not a folder"),
    ]:
        done = good(*args)
        assert done.returncode == 2, (args, done.err)
        assert "Traceback" not in done.err and done.err.count("error:") == 1, (args, done.err)
        assert message in done.err, (args, done.err)
    assert (tmp_path / "afile").read_text() == "mine"


def test_the_metrics_table_does_not_import_the_plotting_stack(good: Cli) -> None:
    """`metrics RUN` (a table) imported matplotlib, most of a second of CPU;
    only --png draws. Import-time behaviour needs a fresh interpreter."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from trainstack.cli.main import main\n"
        "try:\n"
        "    main(['metrics', 'good'])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('plotting imported:', 'matplotlib' in sys.modules)\n"
    )
    assert good.home is not None
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**good._env(None, True), "TRAINSTACK_HOME": str(good.home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "epoch/loss" in done.stdout
    assert "plotting imported: False" in done.stdout
