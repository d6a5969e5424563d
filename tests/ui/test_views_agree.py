"""Every view tells the same story about a run: `runs show`, the HTML report (whose outcome table
the console's run page shares) and the console's runs list, filters and experiments agree on each
run's status, restarts and replica outcomes, over one registry (real SQLite) holding the cases
that used to disagree:

- a replica the runner stopped because the job had ended: "stopped when the job ended" in `runs
  show`, "exit 143" in the report and the console;
- a local run whose runner died: "interrupted" on its page, yet listed by the `running` filter,
  missed by `interrupted`, counted running by its experiment;
- a damaged registry row: the whole runs page a 503.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.clirunner import Cli
from tests.ui.conftest import LOOPBACK
from trainstack.registry import NewRun, Registry, ReplicaExit, RunKind, RunStatus
from trainstack.registry.home import registry_path
from trainstack.registry.liveness import RunnerIdentity, process_start_time
from trainstack.ui.app import UiConfig, create_app


def _gone_runner() -> RunnerIdentity:
    """The identity of a process that has exited: a runner that died."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    started = process_start_time(proc.pid)
    proc.wait()
    assert started is not None
    return RunnerIdentity(proc.pid, started)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("views") / "home"
    with Registry.open(home) as reg:
        done = reg.create(
            NewRun(name="ended", component="c", component_version="1", kind=RunKind.LOCAL,
                   experiment="exp")
        )  # fmt: skip
        reg.mark_running(done.id, [])
        reg.finish(
            done.id,
            RunStatus.SUCCEEDED,
            exits=[ReplicaExit("master", 0, 0), ReplicaExit("worker", 0, 143, stopped=True)],
            restarts=1,
        )
        dead = reg.create(
            NewRun(name="orphan", component="c", component_version="1", kind=RunKind.LOCAL,
                   experiment="exp"),
            runner=_gone_runner(),
        )  # fmt: skip
        reg.mark_running(dead.id, [ReplicaExit("worker", 0, None)])
        reg.create(NewRun(name="damaged", component="c", component_version="1", kind=RunKind.LOCAL))
    conn = sqlite3.connect(registry_path(home))
    with conn:
        conn.execute("UPDATE runs SET exits = '{not json' WHERE name = 'damaged'")
    conn.close()
    return home


@pytest.fixture
def client(home: Path) -> Iterator[FlaskClient]:
    with create_app(UiConfig(home=home)).test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


def _listed(client: FlaskClient, query: str = "") -> tuple[int, list[str], str]:
    got = client.get("/" + query)
    html = got.get_data(as_text=True)
    return got.status_code, re.findall(r'<a class="run" href="/runs/[^"]+">([^<]+)</a>', html), html


def test_a_replica_stopped_when_the_job_ended_reads_the_same_in_every_view(
    home: Path, client: FlaskClient
) -> None:
    from trainstack.metrics.htmlreport import outcome_rows

    shown = Cli(home)("runs", "show", "ended")
    assert shown.returncode == 0, shown.stderr
    assert "worker-0: stopped when the job ended" in shown.stdout
    with Registry.open(home) as reg:
        record = reg.resolve("ended")
    report = dict(outcome_rows(record))
    assert report["replica worker-0"] == "stopped when the job ended"
    assert report["replica master-0"] == "exit 0"
    page = client.get(f"/runs/{record.id}").get_data(as_text=True)
    assert "stopped when the job ended" in page and "exit 143" not in page


def test_a_run_whose_runner_died_is_interrupted_in_the_filters_and_the_counts(
    client: FlaskClient,
) -> None:
    assert "orphan" in _listed(client, "?status=interrupted")[1]
    assert "orphan" not in _listed(client, "?status=running")[1]
    experiments = client.get("/experiments").get_data(as_text=True)
    row = re.search(r"exp</a>.*?</tr>", experiments, re.S)
    assert row is not None, experiments[:2000]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(0))
    assert cells[:3] == ["2", "0", "0"], cells  # runs, running, failed


def test_a_damaged_row_is_named_and_the_other_runs_still_listed(client: FlaskClient) -> None:
    code, listed, html = _listed(client)
    assert code == 200, html[:2000]
    assert sorted(listed) == ["ended", "orphan"]
    assert "damaged field" in html and "damaged" in html
