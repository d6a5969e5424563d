"""Long series thinned for the console's charts keep their extremes, their gaps and their ends;
short ones are left as they are."""

from __future__ import annotations

import numpy as np

from trainstack.metrics.downsample import BUCKETS, keep


def test_short_series_are_drawn_whole() -> None:
    assert keep(3 * BUCKETS, [np.zeros(3 * BUCKETS)]) is None


def test_spikes_gaps_and_ends_survive_thinning() -> None:
    n = 100_000
    values = np.sin(np.arange(n) / 500.0)
    values[12_345] = 50.0  # a spike
    values[67_890] = -50.0
    values[40_000:40_010] = np.nan  # a gap
    idx = keep(n, [values])
    assert idx is not None and len(idx) <= 3 * BUCKETS + 2
    assert np.all(np.diff(idx) > 0)
    kept = values[idx]
    assert 12_345 in idx and 67_890 in idx and idx[0] == 0 and idx[-1] == n - 1
    assert np.nanmax(kept) == 50.0 and np.nanmin(kept) == -50.0
    assert np.isnan(kept).any()  # the gap stays a gap: the line breaks there
