"""A replica crosses layers as (role, index), not as a "role-index" string parsed back, so
that no layer depends on how keys are spelt. The one place that reads the text is a log file's
name, on disk."""

from __future__ import annotations

import re
from pathlib import Path

from trainstack import logview

PACKAGE = Path(logview.__file__).resolve().parent
PARSE_BACK = re.compile(r"""\.rpartition\(["']-["']\)|\.rsplit\(["']-["'], 1\)""")


def test_no_module_parses_a_replica_key_back_but_the_log_file_reader() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PARSE_BACK.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert [f for f in found if not f.startswith("logview.py")] == [], found
    assert len(found) == 1, found  # logview reads a file name once, in _log_file


def test_log_files_are_selected_by_role_and_index(tmp_path: Path) -> None:
    for name in ("worker-1", "worker-10", "my-role-2", "master-0", "install", "notes-x"):
        (tmp_path / f"{name}.log").write_text("", encoding="utf-8")
    every = logview.select(tmp_path, None, None)
    assert [(f.role, f.index) for f in every] == [
        ("master", 0),
        ("my-role", 2),
        ("worker", 1),
        ("worker", 10),
    ]
    assert [f.key for f in logview.select(tmp_path, "worker", 1)] == ["worker-1"]
    assert [f.key for f in logview.select(tmp_path, "my-role", None)] == ["my-role-2"]
