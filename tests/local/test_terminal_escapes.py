"""Text that did not come through validation — a run record
written by an older or foreign writer, edited by hand, or holding what the runner composed from
file names — reaches the terminal with its control characters escaped (`\\x1b`), in tables and
in `runs show`; JSON escapes them itself. A replica's log body is its own output, shown as
written (as `kubectl logs` does)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.clirunner import Cli
from trainstack.registry import NewRun, Registry, RunStatus, current_runner
from trainstack.registry.home import registry_path
from trainstack.texttable import aligned

ESC, CSI = "\x1b", "\x9b"


def _hostile_record(home: Path) -> str:
    with Registry.open(home) as reg:
        rec = reg.create(
            NewRun(name="plain", component="c", component_version="1.0.0"), current_runner()
        )
        reg.finish(rec.id, RunStatus.FAILED, reason="exit 1")
    conn = sqlite3.connect(registry_path(home))
    conn.execute(
        "UPDATE runs SET experiment = ?, reason = ?, component = ?, tags = ? WHERE id = ?",
        (
            f"exp{ESC}[2J",
            f"outputs not committed: out{CSI}31m/x{ESC}]0;pwned{chr(7)}",
            f"comp{ESC}[8m",
            json.dumps({"k": f"v{ESC}[1m"}),
            rec.id,
        ),
    )
    conn.commit()
    conn.close()
    return rec.id


def test_runs_list_and_show_escape_control_characters(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home")
    run_id = _hostile_record(cli.home)
    listed = cli("runs", "list")
    shown = cli("runs", "show", run_id)
    for done in (listed, shown):
        assert done.returncode == 0, done.stderr
        assert ESC not in done.stdout and CSI not in done.stdout and "\x07" not in done.stdout
    assert "exp\\x1b[2J" in listed.stdout and "comp\\x1b[8m" in listed.stdout
    assert "out\\x9b31m/x\\x1b]0;pwned\\x07" in shown.stdout
    assert "v\\x1b[1m" in shown.stdout
    as_json = cli("runs", "list", "--json")
    assert ESC not in as_json.stdout and CSI not in as_json.stdout
    assert json.loads(as_json.stdout)[0]["experiment"] == f"exp{ESC}[2J"


def test_table_cells_are_escaped_and_aligned_by_what_is_shown() -> None:
    text = aligned([("A", "B"), (f"x{ESC}[2J", "y")])
    assert ESC not in text
    first, second = text.splitlines()
    assert second.index("y") == first.index("B")
