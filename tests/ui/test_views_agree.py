"""Every view tells the same story about a run: `runs show`, the HTML report (whose outcome table
the console's run page shares) and the console's runs list, filters and experiments agree on each
run's status, restarts and replica outcomes, over one registry (real SQLite) holding the cases
that used to disagree:

- a replica the runner stopped because the job had ended: "stopped when the job ended" in `runs
  show`, "exit 143" in the report and the console;
- a local run whose runner died: "interrupted" on its page, yet listed by the `running` filter,
  missed by `interrupted`, counted running by its experiment;
- a damaged registry row: the whole runs page a 503;
- a deployed run with its pods' lifetimes in its store: priced, and its time split, by `runs
  show` and the report, not by the console;

and, run by run, `runs show`, the report and the console's page give the same status, restarts
and reason (`status` of a deployed run reads the cluster, tested against recorded responses in
tests/deploy, and its console page shares those lines: tests/deploy/test_queued_status.py).
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
        failed = reg.create(
            NewRun(name="failed", component="c", component_version="1", kind=RunKind.LOCAL)
        )
        reg.mark_running(failed.id, [])
        reg.finish(
            failed.id,
            RunStatus.FAILED,
            exits=[ReplicaExit("master", 0, 1), ReplicaExit("worker", 0, 137)],
            restarts=2,
            reason="master-0 exited with exit code 1 (not retried)",
        )
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
    assert sorted(listed) == ["ended", "failed", "orphan"]
    assert "damaged field" in html and "damaged" in html


@pytest.mark.parametrize("name", ["ended", "orphan", "failed"])
def test_every_view_tells_a_runs_outcome_restarts_and_reason_alike(
    name: str, home: Path, client: FlaskClient, tmp_path: Path
) -> None:
    """`runs show`, the report and the console's run page, of each run of the registry: the
    same status, restarts, reason and replica outcomes."""
    import html as htmlmod
    import json

    cli = Cli(home)
    shown = cli("runs", "show", name, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)["run"]
    report_file = tmp_path / "report.html"
    made = cli("report", name, "-o", report_file)
    assert made.returncode == 0, made.stderr
    report = htmlmod.unescape(report_file.read_text())
    page = htmlmod.unescape(client.get(f"/runs/{run['id']}").get_data(as_text=True))

    def row(doc: str, label: str) -> str | None:
        found = re.search(rf"<th>{re.escape(label)}</th>\s*<td>([^<]*)</td>", doc)
        return found.group(1) if found else None

    for doc in (report, page):
        assert row(doc, "status") == run["status"], (name, run["status"])
        assert row(doc, "restarts") == str(run["restarts"])
        assert row(doc, "reason") == run["reason"]
    status = re.search(r'id="status">([^<]+)<', page)
    assert status is not None and status.group(1) == run["status"]


RATES = {"currency": "CNY", "vcpuHour": 0.5, "memoryGiBHour": 0.01, "gpuHour": 6.0}
LOGS = "pvc://trainstack-artifacts/vision/trained/logs/"


def _deployed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A deployed run as `status` leaves it: its registry record (an OOM kill in its recovery
    history), its `pods.json` on a claim store mounted here, its environment's rates.
    (home, store, project)."""
    import yaml

    from trainstack.metrics.podtimes import TERMINATED, PodLife, PodTimes
    from trainstack.metrics.progress import Mark
    from trainstack.registry.model import Restart

    home, store, project = tmp_path / "home", tmp_path / "claim", tmp_path / "platform"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        yaml.safe_dump({"name": "trainstack", "runtime": "python"})
    )
    config = {"trainstack:mode": "kubeconfig", "trainstack:costs": RATES}
    (project / "Pulumi.local.yaml").write_text(yaml.safe_dump({"config": config}))
    t0 = 1_764_000_000.0
    with Registry.open(home) as reg:
        rec = reg.create(
            NewRun(name="trained", component="c", component_version="1", kind=RunKind.CLUSTER,
                   stack_name="local.vision.trained")
        )  # fmt: skip
        reg.mark_running(rec.id, [])
        reg.record_log_place(rec.id, LOGS, None)
        reg.record_restart(rec.id, Restart(t0 + 600, "worker", 0, 137, "OOMKilled"))
        reg.finish(rec.id, RunStatus.SUCCEEDED, exits=[ReplicaExit("worker", 0, 0)], restarts=1)
    pods = tuple(
        PodLife(
            role,
            0,
            t0 + 60,
            f"trained-{role}-0",
            f"uid-{role}",
            t0 + 1800,
            t0 + 1800,
            TERMINATED,
            cpu=4,
            memory_gib=16,
            gpu=1,
            running=t0 + 70,
        )
        for role in ("master", "worker")
    )
    marks = (Mark(t0 + 100, None), Mark(t0 + 500, 10.0), Mark(t0 + 700, 12.0))
    kept = PodTimes("trained", "local", "local.vision.trained", "vision", "c", None, "succeeded",
                    t0 + 1800, pods, created=t0, marks=marks)  # fmt: skip
    (store / "vision" / "trained" / "logs").mkdir(parents=True)
    (store / "vision" / "trained" / "logs" / "pods.json").write_text(kept.to_json())
    return home, store, project


def test_a_deployed_runs_cost_and_ledger_read_the_same_in_every_view(tmp_path: Path) -> None:
    """`runs show`, the report and the console's run page price a deployed run from its pods'
    lifetimes in the store and split its time alike; the console showed no cost for one."""
    from html import unescape

    home, store, project = _deployed(tmp_path)
    where = ("--store", store, "--project", project)
    shown = Cli(home)("runs", "show", "trained", *where)
    assert shown.returncode == 0, shown.stderr
    rows = [line.split(None, 1) for line in shown.stdout.splitlines() if line.strip()]
    cost = next(value for key, value in rows if key == "cost")
    ledger = [value for key, value in rows if key == "goodput"]
    assert "CNY" in cost and len(ledger) == 7, shown.stdout
    report = tmp_path / "report.html"
    made = Cli(home)("report", "trained", "-o", report, *where)
    assert made.returncode == 0, made.stderr
    with Registry.open(home) as reg:
        record = reg.resolve("trained")
    config = UiConfig(home=home, project=project, store=store)
    with create_app(config).test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        page = unescape(client.get(f"/runs/{record.id}").get_data(as_text=True))
    for view in (unescape(report.read_text()), page):
        assert cost in view
        assert all(line in view for line in ledger), ledger


def test_the_report_shows_a_log_as_the_console_does_without_escape_codes(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name="coloured", component="c", component_version="1"))
        reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
        reg.finish(rec.id, RunStatus.SUCCEEDED, exits=[ReplicaExit("worker", 0, 0)])
    assert rec.run_dir is not None
    (rec.run_dir / "logs").mkdir(parents=True)
    (rec.run_dir / "logs" / "worker-0.log").write_text(
        "\x1b[31mloss 0.5\x1b[0m epoch 1\n\x1b]0;title\x07step 2\n"
    )
    out = tmp_path / "report.html"
    made = Cli(home)("report", "coloured", "-o", out)
    assert made.returncode == 0, made.stderr
    report = out.read_text()
    assert "loss 0.5 epoch 1\nstep 2" in report
    assert "\x1b" not in report and "[31m" not in report and "0;title" not in report
    with create_app(UiConfig(home=home)).test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        page = client.get(f"/runs/{rec.id}").get_data(as_text=True)
    assert "loss 0.5 epoch 1" in page and "\x1b" not in page
