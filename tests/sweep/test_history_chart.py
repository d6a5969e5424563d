"""The sweep's history chart and the comparison overlay: whole-number trial
ticks (no trial 1.5), and points and lines named by the parameters that differ, not run ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from trainstack.metrics.labels import differing
from trainstack.spec.sweepmodel import Goal
from trainstack.sweep import summary
from trainstack.sweep.view import TrialRow, TrialState


def rows() -> list[TrialRow]:
    return [
        TrialRow(
            0,
            "t0",
            {"lr": 0.01, "optimizer": "adam", "epochs": 3},
            TrialState.COMPLETE,
            0.8,
            None,
            "",
        ),
        TrialRow(
            1,
            "t1",
            {"lr": 0.001, "optimizer": "adam", "epochs": 3},
            TrialState.COMPLETE,
            0.7,
            None,
            "",
        ),
        TrialRow(
            2,
            "t2",
            {"lr": 0.01, "optimizer": "sgd", "epochs": 3},
            TrialState.COMPLETE,
            0.9,
            None,
            "",
        ),
    ]


def test_labels_name_what_differs() -> None:
    assert differing([r.params for r in rows()]) == [
        "lr=0.01, optimizer=adam",
        "lr=0.001, optimizer=adam",
        "lr=0.01, optimizer=sgd",
    ]
    assert differing([{"a": 1}, {"a": 1}]) == ["", ""]


def test_the_history_chart_has_whole_trial_ticks_and_labelled_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Figure] = []
    real = Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        seen.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    path = summary.draw_history(rows(), Goal.MAXIMIZE, "epoch/accuracy", tmp_path / "h.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (ax,) = seen[0].axes
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert [t.get_text() for t in ax.texts] == [
        "lr=0.01, optimizer=adam",
        "lr=0.001, optimizer=adam",
        "lr=0.01, optimizer=sgd",
    ]
