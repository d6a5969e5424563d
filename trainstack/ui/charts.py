"""The console's charts: the metrics spec's charts, each replica's usage, compare's overlay and
a sweep's history, drawn server-side by trainstack.metrics.draw as PNG, long series thinned
first (trainstack.metrics.downsample), and kept while what each is drawn from stays the same
(the runs' files; a sweep's storage): a page's images are drawn once, not on every request.

matplotlib's text settings (`plain_text`: no mathtext for user text) are process-wide while a
figure is drawn, so figures are drawn one at a time under a lock; what is kept is served
without it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from trainstack.contract.rundir import RunDir
from trainstack.errors import NotFoundError
from trainstack.metrics import downsample, usage
from trainstack.metrics.idle import IdleThresholds, IdleWarning, detect_in
from trainstack.metrics.runview import RunView, view
from trainstack.metrics.usage import ReplicaUsage
from trainstack.registry.model import RunRecord
from trainstack.ui.cache import Stamp, StampCache, forget_all, stamp

_DRAW = threading.Lock()
FAST = 1  # zlib level of the PNGs drawn on request (trainstack.metrics.draw)


def _weight(v: RunView) -> int:
    """The bytes of a view's series, which is most of what it holds."""
    arrays = [c.x for c in v.metrics.charts]
    arrays += [col.values for c in v.metrics.charts for col in c.columns]
    for u in v.usage:
        arrays += [u.t, u.cpu_percent, u.rss_bytes]
        arrays += [a for g in u.gpus for a in (g.t, g.util_percent, g.mem_used_bytes)]
    return sum(int(a.nbytes) for a in arrays) + 4096


# Compare reads up to 12 runs (trainstack.ui.comparepage.MAX_RUNS) at once: more are kept, so
# that redrawing a comparison does not push its first runs out while reading its last.
_VIEWS: StampCache[RunView] = StampCache(32, budget=512 << 20, weigh=_weight)
_PNGS: StampCache[bytes] = StampCache(1024, budget=64 << 20, weigh=len)
_IDLE: StampCache[tuple[IdleWarning, ...]] = StampCache(4096)


def forget() -> None:
    """Drop everything read and drawn, here and by the pages (a benchmark's cold start)."""
    forget_all()


def _files(record: RunRecord) -> tuple[Path, ...]:
    root = record.run_dir
    assert root is not None
    return (
        RunDir(root).metrics,
        RunDir(root).usage,
        RunDir(root).training_job,
    )


def run_view(record: RunRecord) -> RunView:
    """A local run's metrics, values, usage and idle warnings (trainstack.metrics.runview), read
    once per change of its files."""
    got = _VIEWS.get(record.id, stamp(*_files(record)), lambda: view(record))
    return replace(got, record=record)


def idle_of(record: RunRecord) -> tuple[IdleWarning, ...]:
    """A local run's idle warnings, from its usage samples only (the runs page's column)."""
    root = record.run_dir
    assert root is not None
    path = RunDir(root).usage

    def read() -> tuple[IdleWarning, ...]:
        return detect_in(usage.read(path, root=root), IdleThresholds.from_env())

    return _IDLE.get(record.id, stamp(path), read)


def _drawn(key: tuple[object, ...], record: RunRecord, draw: Callable[[], bytes]) -> bytes:
    return drawn(key, stamp(*_files(record)), draw)


def drawn(key: tuple[object, ...], current: Stamp, draw: Callable[[], bytes]) -> bytes:
    """The PNG `draw` makes, drawn under the lock once per change of `current`."""

    def locked() -> bytes:
        with _DRAW:
            return draw()

    return _PNGS.get(key, current, locked)


def chart_png(record: RunRecord, number: int) -> bytes:
    from trainstack.metrics.draw import chart_png as draw

    charts = run_view(record).metrics.charts
    if not 0 <= number < len(charts):
        raise NotFoundError(f"run {record.id} has no chart {number}")
    data = charts[number]
    return _drawn(
        (record.id, "chart", number), record, lambda: draw(downsample.chart(data), compression=FAST)
    )


def usage_png(record: RunRecord, replica: str) -> bytes:
    from trainstack.metrics.draw import usage_png as draw

    found: ReplicaUsage | None = next(
        (u for u in run_view(record).usage if u.replica == replica), None
    )
    if found is None:
        raise NotFoundError(f"run {record.id} has no usage of replica {replica!r}")
    rep = found
    return _drawn(
        (record.id, "usage", replica), record, lambda: draw(downsample.usage(rep), compression=FAST)
    )


def overlay_png(views: Sequence[RunView], metric: str) -> bytes:
    from trainstack.metrics.compare import overlay

    key = ("overlay", tuple(v.record.id for v in views), metric)
    current = tuple(stamp(*_files(v.record)) for v in views)
    return drawn(key, current, lambda: overlay(views, metric, thin=True))
