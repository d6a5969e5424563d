"""A log that is one endless line: a progress bar (tqdm, Keras) redraws itself with `\r` and,
off a terminal, never writes `\n`. `trainstack logs` reads each redraw as a line of its own, and
a line with no end at all in pieces of at most MAX_LINE; never the whole log as one line (its
speed: benchmarks/bench_logs.py)."""

from __future__ import annotations

from pathlib import Path

from trainstack import logview
from trainstack.logfiles import MAX_LINE
from trainstack.logtail import Tail, last_lines

BARS = b"".join(b"\r%3d%%|%-20s|" % (i, b"#" * (i // 5)) for i in range(101))
LOG = b"epoch 1\r\n" + BARS + b"\rdone\n" + b"x" * (5 * MAX_LINE) + b"\nlast"


def _log(tmp_path: Path) -> list[logview.LogFile]:
    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    (logs / "worker-0.log").write_bytes(LOG)
    return logview.select(logs, None, None)


def _shown(files: list[logview.LogFile], grep: str, tail: int | None = None) -> list[bytes]:
    out: list[bytes] = []
    logview.show(
        files, out.append, tail=tail, keep=logview.line_filter(logview.compile_grep(grep), None)
    )
    return b"".join(out).splitlines()


def test_grep_finds_one_redraw_of_a_progress_bar(tmp_path: Path) -> None:
    files = _log(tmp_path)
    assert _shown(files, r"^ 50%") == [b" 50%|##########          |"]
    assert _shown(files, r"^(epoch|done|last)") == [b"epoch 1", b"done", b"last"]
    pieces = _shown(files, "x")
    assert len(pieces) == 5 and all(len(p) == MAX_LINE for p in pieces)


def test_the_tail_of_a_progress_bar_log_is_its_last_redraws(tmp_path: Path) -> None:
    files = _log(tmp_path)
    path = files[0].path
    assert last_lines(path, 1, root=files[0].run_dir) == [b"last"]
    assert len(last_lines(path, 6, root=files[0].run_dir)[0]) == MAX_LINE
    assert _shown(files, "", tail=8)[:2] == [b"100%|####################|", b"done"]


def test_pod_logs_and_a_followed_log_split_at_a_redraw_too(tmp_path: Path) -> None:
    got: list[bytes] = []
    write = logview.grep_lines(got.append, logview.line_filter(logview.compile_grep("99%"), None))
    for i in range(0, len(BARS), 7):  # chunks that cut the bar anywhere
        write(BARS[i : i + 7])
    write(b"\n")
    assert got == [b" 99%|################### |\n"]
    files = _log(tmp_path)
    tail = Tail(files[0].path, root=files[0].run_dir)
    lines, _ = tail.poll(budget=1 << 20)
    assert lines[:3] == [b"epoch 1", b"", b"  0%|                    |"]
    assert tail.rest() == [b"last"]
