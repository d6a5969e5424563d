"""Usage charts of very short runs: one sample at 0 was drawn on axes from
-0.04 to 0.04 (negative CPU and memory), and a replica the sampler never saw got no chart while
its siblings did. Now: axes from 0, a "too short to sample" note, a chart for every replica."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from trainstack.metrics import draw
from trainstack.metrics.usage import ReplicaUsage, with_unsampled


def one(values: list[float]) -> ReplicaUsage:
    a = np.array(values, dtype=float)
    return ReplicaUsage("worker-0", np.arange(len(a), dtype=float), a, a * 1e6, ())


def test_a_flat_zero_series_gets_an_axis_from_zero() -> None:
    ax = Figure().add_subplot()
    draw._line(ax, np.array([0.0]), [("CPU", np.array([0.0]))], "CPU (%)")
    assert ax.get_ylim() == (0.0, 1.0)
    ax = Figure().add_subplot()
    draw._line(ax, np.array([0.0, 1.0, 2.0]), [("CPU", np.array([5.0, 50.0, 20.0]))], "CPU (%)")
    low, high = ax.get_ylim()
    assert low == 0.0 and high >= 50.0


def test_a_replica_without_samples_gets_a_chart_that_says_so() -> None:
    sampled = one([10.0, 20.0, 30.0])
    found = with_unsampled((sampled,), ["master-0", "worker-0"])
    assert [u.replica for u in found] == ["master-0", "worker-0"]
    assert len(found[0].t) == 0
    for rep in (found[0], one([0.0])):
        png = draw.usage_png(rep)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ax = Figure().add_subplot()
    draw._too_short(ax, 1)
    assert [t.get_text() for t in ax.texts] == ["too short to sample (1 sample)"]
