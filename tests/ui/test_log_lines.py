"""The console's search and tail of a log that is one endless line of progress-bar redraws
(`\r`, never `\n`): each redraw is a line, a line with no end comes in pieces."""

from __future__ import annotations

from pathlib import Path

from tests.ui.serving import home_with_a_log
from trainstack.logfiles import MAX_LINE
from trainstack.registry import Registry
from trainstack.ui import logs

BARS = b"".join(b"\r%3d%%|%-20s|" % (i, b"#" * (i // 5)) for i in range(101))


def test_search_and_tail_read_each_redraw_as_a_line(tmp_path: Path) -> None:
    run_id = home_with_a_log(tmp_path / "home", BARS + b"\rdone\r\n" + b"x" * (3 * MAX_LINE))
    with Registry.open(tmp_path / "home") as reg:
        record = reg.get(run_id)
    found = logs.search(record, "worker-0", " 50%")
    assert found.count == 1 and found.lines[0][1] == " 50%|##########          |"
    xs = logs.search(record, "worker-0", "xxx")
    assert xs.count == 3 and all(len(text) == MAX_LINE for _, text in xs.lines)
    shown = logs.tail(record, "worker-0").lines
    assert shown[-5:-3] == ("100%|####################|", "done")
