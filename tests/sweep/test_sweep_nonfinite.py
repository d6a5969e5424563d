"""A metric value of inf (what a diverging loss prints), -inf or NaN is a value: shown as such,
never the best, and a sweep trial whose objective holds one fails instead of crashing the
sweep. The engine runs for real against its optuna storage; the trials' runs are a
launcher that hands it a `$METRICS` folder, as a finished local run would."""

from __future__ import annotations

import io
import math
from pathlib import Path

from tests.clirunner import Cli
from trainstack.metrics import series
from trainstack.metrics.values import Goal, chart_values, number
from trainstack.spec.loader import load_sweep
from trainstack.sweep.engine import run_sweep
from trainstack.sweep.view import TrialState, View

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"
META = '{"id": "x", "metas": [{"name": "epoch", "x": "epoch", "ys": ["accuracy"]}]}'


def metrics_dir(tmp: Path, rows: str) -> Path:
    d = tmp / "run" / "metrics"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(META)
    (d / "epoch.csv").write_text("epoch,accuracy\n" + rows)
    return d


def test_inf_and_nan_are_shown_and_never_best(tmp_path: Path) -> None:
    d = metrics_dir(tmp_path, "1,0.5\n2,inf\n3,-inf\n4,nan\n5,1e308\n")
    [data] = series.read(d).charts
    [v] = chart_values(data)
    assert v.goal is Goal.MAX
    assert (v.best, v.best_x) == (1e308, 5)
    assert number(math.inf) == "inf" and number(-math.inf) == "-inf" and number(1e308) == "1e+308"
    only = metrics_dir(tmp_path / "b", "1,inf\n2,-inf\n")
    [w] = chart_values(series.read(only).charts[0])
    assert w.best is None and w.last == -math.inf


class _Ended:
    def __init__(self, metrics: Path) -> None:
        self._metrics = metrics

    def poll(self) -> bool:
        return True

    def succeeded(self) -> bool:
        return True

    def reason(self) -> str:
        return ""

    def run_id(self) -> str | None:
        return None

    def metrics(self) -> Path | None:
        return self._metrics

    def stop(self) -> None:
        return None

    def wait(self, timeout: float) -> None:
        return None


class _Launcher:
    """Trial 1 diverges (accuracy inf at epoch 2); the others end at a finite value."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started = 0

    def start(self, spec: Path, name: str) -> _Ended:
        self.started += 1
        rows = "1,0.5\n2,inf\n" if self.started == 2 else f"1,0.5\n2,0.{self.started}\n"
        return _Ended(metrics_dir(self.tmp / name, rows))


def test_a_trial_whose_objective_is_inf_fails_and_the_sweep_finishes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sweep = load_sweep(EXAMPLE)
    out = io.StringIO()
    result = run_sweep(sweep, home, _Launcher(tmp_path), View(out, live=False), poll_seconds=0)
    states = [r.state for r in result.rows]
    assert states.count(TrialState.FAILED) == 1 and states.count(TrialState.COMPLETE) == 3
    [failed] = [r for r in result.rows if r.state is TrialState.FAILED]
    assert "epoch/accuracy is inf at step 2" in failed.reason
    cli = Cli(home)
    listed = cli.invoke("sweeps", "list")
    assert listed.code == 0, listed.output
    shown = cli.invoke("sweeps", "show", sweep.name)
    assert shown.code == 0, shown.output
    assert "failed" in shown.output


def test_a_study_that_recorded_inf_still_lists_and_shows(tmp_path: Path) -> None:
    """A storage written before this fix holds inf as a completed trial's value."""
    from trainstack.sweep import study as studies

    home = tmp_path / "home"
    sweep = load_sweep(EXAMPLE)
    studies.sweep_dir(home, sweep.name).mkdir(parents=True)
    st = studies.open_study(sweep, studies.sweep_dir(home, sweep.name))
    dists = studies.distributions(sweep)
    st.tell(st.ask(dists), math.inf)
    st.tell(st.ask(dists), 0.5)
    cli = Cli(home)
    for argv in (["sweeps", "list"], ["sweeps", "show", sweep.name]):
        done = cli.invoke(*argv)
        assert done.code == 0, done.output
    assert "inf" in cli.invoke("sweeps", "show", sweep.name).out
