"""Drawing as the metadata says, idle detection on a written usage file, the report's escaping."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainstack.errors import UserError
from trainstack.metrics import series
from trainstack.metrics.draw import chart_figure, smooth
from trainstack.metrics.idle import IdleThresholds, detect
from trainstack.metrics.spec import META_FILE


def write_chart(d: Path, meta: dict[str, object], csv: str) -> series.ChartData:
    d.mkdir(parents=True, exist_ok=True)
    (d / META_FILE).write_text(json.dumps({"id": "r", "metas": [meta]}))
    (d / f"{meta['name']}.csv").write_text(csv)
    [data] = series.read(d).charts
    return data


def test_a_dual_axis_chart_has_two_labelled_y_axes(tmp_path: Path) -> None:
    data = write_chart(
        tmp_path,
        {
            "name": "fit",
            "x": "epoch",
            "ys": ["loss", "accuracy"],
            "description": "both",
            "units": {"loss": "nats"},
        },
        "epoch,loss,accuracy\n1,2,0.5\n2,1,0.9\n",
    )
    fig = chart_figure(data)
    left, right = fig.axes
    assert left.get_title() == "fit\nboth" and left.get_xlabel() == "epoch"
    assert (left.get_ylabel(), right.get_ylabel()) == ("loss (nats)", "accuracy")
    assert [list(line.get_ydata()) for line in left.lines] == [[2, 1]]
    assert [list(line.get_ydata()) for line in right.lines] == [[0.5, 0.9]]


def test_series_share_one_axis_and_smoothing_adds_a_smoothed_line(tmp_path: Path) -> None:
    rows = "\n".join(f"{s},{s % 2},{10 + s % 2}" for s in range(1, 101))
    data = write_chart(
        tmp_path,
        {"name": "s", "x": "step", "ys": ["v"], "series": ["a", "b"], "smooth": "true"},
        "step,a,b\n" + rows + "\n",
    )
    [ax] = chart_figure(data).axes
    raw_a, smooth_a, raw_b, smooth_b = ax.lines
    assert raw_a.get_alpha() == 0.25 and smooth_a.get_label() == "a"
    assert raw_b.get_color() == smooth_b.get_color() != smooth_a.get_color()
    # The alternating 0/1 series smooths to about 0.5 once the window (5 points) is full.
    assert np.allclose(smooth_a.get_ydata()[10:], 0.5, atol=0.11)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def visible_xticks(fig: object) -> list[float]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()  # type: ignore[arg-type]
    ax = fig.axes[0]  # type: ignore[attr-defined]
    lo, hi = ax.get_xlim()
    return [float(t) for t in ax.get_xticks() if lo <= t <= hi]


def test_an_integer_x_axis_gets_whole_number_ticks(tmp_path: Path) -> None:
    """Three epochs are ticked 1, 2, 3, not 1.00, 1.25, ... 3.00."""
    data = write_chart(
        tmp_path / "epochs",
        {"name": "fit", "x": "epoch", "ys": ["loss"]},
        "epoch,loss\n1,2\n2,1.5\n3,1.2\n",
    )
    ticks = visible_xticks(chart_figure(data))
    assert ticks and all(t == int(t) for t in ticks), ticks
    # a fractional x keeps fractional ticks
    data = write_chart(
        tmp_path / "seconds",
        {"name": "t", "x": "time", "ys": ["loss"]},
        "time,loss\n0.1,2\n0.2,1.5\n0.3,1.2\n",
    )
    assert any(t != int(t) for t in visible_xticks(chart_figure(data)))


def test_smoothing_is_a_trailing_mean_that_skips_gaps() -> None:
    values = np.array([1.0, 2.0, np.nan, 4.0] * 10)
    out = smooth(values)
    assert len(out) == 40 and np.isnan(out[2])
    # 40 points: a window of 2, so point 3 averages the gap (skipped) and itself.
    assert out[1] == pytest.approx(1.5) and out[3] == pytest.approx(4.0)
    assert out[5] == pytest.approx(1.5) and out[4] == pytest.approx(2.5)


def usage_line(t: float, replica: str, cpu: float, gpus: list[float] | None = None) -> str:
    sample: dict[str, object] = {"t": t, "replica": replica, "cpu_percent": cpu, "rss_bytes": 1000}
    if gpus is not None:
        sample["gpus"] = [
            {"index": i, "util_percent": u, "mem_used_bytes": 5} for i, u in enumerate(gpus)
        ]
    return json.dumps(sample) + "\n"


def test_idle_gpus_and_cpus_over_a_sustained_stretch(tmp_path: Path) -> None:
    usage = tmp_path / "usage.jsonl"
    lines = []
    for t in range(0, 601, 10):
        # GPU 1 idles from 100 s to 500 s; GPU 0 is busy; the CPU-only replica idles 60 s once.
        lines.append(
            usage_line(1000.0 + t, "worker-0", 90.0, [95.0, 3.0 if 100 <= t <= 500 else 80.0])
        )
        lines.append(usage_line(1000.0 + t, "worker-1", 1.0 if 200 <= t <= 260 else 150.0))
    usage.write_text("".join(lines) + "not json\n")
    warnings = detect(usage, IdleThresholds(gpu_percent=10, cpu_percent=10, seconds=300))
    assert [w.render() for w in warnings] == [
        "worker-0: GPU 1 below 10% for 400s (from 100s into the run)"
    ]
    short = detect(usage, IdleThresholds(seconds=60))
    assert [(w.replica, w.resource, w.seconds) for w in short] == [
        ("worker-0", "GPU 1", 400.0),
        ("worker-1", "CPU", 60.0),
    ]
    assert detect(tmp_path / "absent.jsonl", IdleThresholds()) == ()


def test_thresholds_come_from_the_environment() -> None:
    t = IdleThresholds.from_env(
        {"TRAINSTACK_IDLE_GPU_PERCENT": "25", "TRAINSTACK_IDLE_SECONDS": "60"}
    )
    assert (t.gpu_percent, t.cpu_percent, t.seconds) == (25.0, 10.0, 60.0)
    with pytest.raises(UserError, match=r"\$TRAINSTACK_IDLE_CPU_PERCENT='-1'"):
        IdleThresholds.from_env({"TRAINSTACK_IDLE_CPU_PERCENT": "-1"})


def test_the_report_escapes_what_runs_wrote() -> None:
    from trainstack.metrics.htmlreport import LogTail, Page, render

    page = Page(
        title="t",
        outcome=(("status", "failed: <b>x</b>"),),
        parameters=(),
        resources=(),
        metric_rows=(),
        charts=(),
        problems=("bad <script>",),
        usage_rows=(),
        usage_charts=(),
        idle=(),
        logs=(LogTail("worker-0", 1, "<script>alert(1)</script>\n"),),
        generated="now",
    )
    html = render(page)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_usage_charts_and_csv_show_each_gpu(tmp_path: Path) -> None:
    from matplotlib import image

    from trainstack.metrics.draw import usage_png
    from trainstack.metrics.export import usage_csv
    from trainstack.metrics.usage import read

    usage = tmp_path / "usage.jsonl"
    usage.write_text(
        "".join(usage_line(50.0 + t, "worker-0", 100.0, [10.0 * t, 50.0]) for t in range(5))
    )
    [rep] = read(usage)
    assert [g.index for g in rep.gpus] == [0, 1] and list(rep.t) == [0, 1, 2, 3, 4]
    png = tmp_path / "u.png"
    png.write_bytes(usage_png(rep))
    assert image.imread(png).shape[:2] == (640, 800)  # two rows: CPU/memory, GPU util/memory
    lines = usage_csv(rep).splitlines()
    assert lines[0] == (
        "seconds,cpu_percent,rss_bytes,gpu0_util_percent,gpu0_mem_used_bytes,"
        "gpu1_util_percent,gpu1_mem_used_bytes"
    )
    assert lines[3] == "2,100,1000,20,5,50,5"


def test_the_report_log_tail_reads_only_the_end_and_keeps_the_lines(tmp_path: Path) -> None:
    """The last LOG_TAIL_LINES lines across the log and its rotations, read from the end of each
    part (a part of hundreds of MB costs 256 KiB), lines whole and in order."""
    from trainstack.local.logcap import rotation
    from trainstack.metrics.htmlreport import LOG_TAIL_BYTES, LOG_TAIL_LINES, _tail

    log = tmp_path / "worker-0.log"
    rotation(log, 1).write_text("".join(f"old {i}\n" for i in range(30)))
    # Longer than the window: its first line in the window starts before it.
    body = "".join(f"line {i:07d}\n" for i in range(LOG_TAIL_BYTES // 13 + 100))
    log.write_text(body[: len(body) - 13] + "partial, no newline")
    tail = _tail(log, tmp_path)
    expected = [*body.splitlines(keepends=True)[-LOG_TAIL_LINES:-1], "partial, no newline"]
    assert tail.text == "".join(expected)
    short = tmp_path / "short.log"
    rotation(short, 1).write_text("a\nb\n")
    short.write_text("c\nd")
    assert _tail(short, tmp_path).text == "a\nb\nc\nd"
