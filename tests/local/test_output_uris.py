"""A local run's registry record says where each bound output is committed; `runs show` prints
it (unbound outputs stay in the run directory, which `runs show` lists as before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run


@pytest.mark.slow
def test_a_local_run_records_where_its_outputs_go(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, "probe", "o", parameters={"mode": "quick", "seconds": 0.0})
    done = cli("run", spec, "--local", "--output", f"result={tmp_path / 'res'}")
    assert done.returncode == 0, done.stderr
    shown = cli("runs", "show", "o", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["run"]["output_uris"] == {
        "result": f"file://{tmp_path / 'res'}/"
    }
