"""An objective naming a metric the runs never write (`epoch/acc` for
`epoch/accuracy`) used to run every trial, then say no trial had an objective value. The first
trial that finishes without it stops the sweep, with the metrics it did write and a did-you-mean."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from tests.sweep.test_sweep_nonfinite import EXAMPLE, _Ended, metrics_dir
from trainstack.errors import UserError
from trainstack.spec.loader import load_sweep
from trainstack.sweep.engine import run_sweep
from trainstack.sweep.view import View


class _Launcher:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.started, self.stopped = tmp, 0, 0

    def start(self, spec: Path, name: str) -> _Ended:
        self.started += 1
        launcher = self

        class Handle(_Ended):
            def stop(self) -> None:
                launcher.stopped += 1

        return Handle(metrics_dir(self.tmp / name, "1,0.5\n2,0.7\n"))


def test_a_misspelled_objective_stops_the_sweep_after_its_first_trial(tmp_path: Path) -> None:
    sweep = load_sweep(EXAMPLE)
    wrong = dataclasses.replace(
        sweep, objective=dataclasses.replace(sweep.objective, metric="epoch/acc")
    )
    launcher = _Launcher(tmp_path)
    with pytest.raises(UserError) as caught:
        run_sweep(
            wrong, tmp_path / "home", launcher, View(io.StringIO(), live=False), poll_seconds=0
        )
    error = caught.value
    assert "without writing the objective metric 'epoch/acc'" in error.message
    assert "it wrote: epoch/accuracy" in error.message
    assert "did you mean 'epoch/accuracy'?" in (error.hint or "")
    # the budget is 4 trials, 2 at a time: the sweep stops at the first batch
    assert launcher.started == 2 < wrong.trial_count


def test_a_value_that_is_not_a_number_is_named_not_taken_for_a_misnamed_metric(
    tmp_path: Path,
) -> None:
    """The objective is named right but its CSV holds a word: the sweep says which cell, and
    does not ask for the metric to be renamed."""

    class Garbled(_Launcher):
        def start(self, spec: Path, name: str) -> _Ended:
            self.started += 1
            return _Ended(metrics_dir(self.tmp / name, "1,0.5\n2,oops\n"))

    sweep = load_sweep(EXAMPLE)
    with pytest.raises(UserError) as caught:
        run_sweep(
            sweep,
            tmp_path / "home",
            Garbled(tmp_path),
            View(io.StringIO(), live=False),
            poll_seconds=0,
        )
    error = caught.value
    assert "wrote: none" not in error.message
    assert f"objective metric {sweep.objective.metric!r} could not be read" in error.message
    assert "epoch.csv:3:2: 'oops' is not a number" in error.message
    assert "spec.objective.metric" not in (error.hint or "")
    assert "must be a number" in (error.hint or "")
