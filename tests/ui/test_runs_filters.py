"""The runs page over a registry filled through its API (real SQLite): filters, sort, pages,
"only mine", and a deployed run's page with and without the cluster at hand."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK
from trainstack.deploy import service
from trainstack.deploy.jobstate import JobState, Outcome, ReplicaState
from trainstack.registry import NewRun, Registry, RunKind, RunStatus
from trainstack.registry.home import registry_path
from trainstack.ui import deployed
from trainstack.ui.app import UiConfig, create_app

RUNS = 120


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("many") / "home"
    with Registry.open(home) as reg:
        for i in range(RUNS):
            rec = reg.create(
                NewRun(
                    name=f"job-{i:03d}",
                    component=("resnet", "bert")[i % 2],
                    component_version="1.0.0",
                    kind=RunKind.CLUSTER if i == 7 else RunKind.LOCAL,
                    job_type=("pytorch", "tensorflow", "xgboost")[i % 3],
                    experiment=f"exp-{i % 4}",
                    tags={"team": ("vision", "nlp")[i % 2], "env": "ack-dev", "k": str(i % 5)},
                    stack_name="ack-dev.nlp.job-007" if i == 7 else None,
                )
            )
            reg.mark_running(rec.id, [])
            reg.finish(rec.id, (RunStatus.SUCCEEDED, RunStatus.FAILED)[i % 2])
    # job-007 was deployed to this home's own file backend, which therefore holds stacks
    (home / "pulumi" / ".pulumi").mkdir(parents=True)
    conn = sqlite3.connect(registry_path(home))
    with conn:  # one run made by someone else, one long ago
        conn.execute("UPDATE runs SET created_by = 'someone-else' WHERE name = 'job-000'")
        conn.execute("UPDATE runs SET created_at = ? WHERE name = 'job-001'", (time.time() - 9e5,))
    conn.close()
    return home


@pytest.fixture
def client(home: Path) -> Iterator[FlaskClient]:
    with create_app(UiConfig(home=home)).test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


def names(client: FlaskClient, query: str) -> tuple[list[str], str]:
    html = client.get("/" + query).get_data(as_text=True)
    found = re.findall(r'<a class="run" href="/runs/[^"]+">([^<]+)</a>', html)
    summary = re.search(r'<p class="summary" id="summary">([^<]+) <button', html)
    assert summary is not None, html[:2000]
    return found, summary.group(1)


def test_pages_of_fifty_newest_first(client: FlaskClient) -> None:
    first, summary = names(client, "")
    assert summary == f"runs 1–50 of {RUNS}" and first[0] == "job-119" and len(first) == 50
    third, summary = names(client, "?page=3")
    assert summary == f"runs 101–{RUNS} of {RUNS}" and len(third) == 20
    _, summary = names(client, "?page=99")
    assert summary == f"runs 101–{RUNS} of {RUNS}"  # the last page


def test_each_filter_narrows_the_list(client: FlaskClient) -> None:
    assert names(client, "?q=job-11")[0] == [f"job-11{i}" for i in range(9, -1, -1)]
    assert names(client, "?status=failed")[1] == "runs 1–50 of 60"
    assert names(client, "?job_type=xgboost&component=bert")[1] == "runs 1–20 of 20"
    assert names(client, "?team=nlp&tag=k%3D3")[1] == "runs 1–12 of 12"
    assert names(client, "?env=ack-dev")[1] == f"runs 1–50 of {RUNS}"
    assert names(client, "?kind=cluster")[0] == ["job-007"]
    assert names(client, "?experiment=exp-2")[1] == "runs 1–30 of 30"
    assert "job-001" not in names(client, "?since=2d&q=job-00")[0]
    mine, summary = names(client, "?mine=1&q=job-00")
    assert "job-000" not in mine and summary == "runs 1–9 of 9"


def test_sorting_by_a_column_both_ways(client: FlaskClient) -> None:
    assert names(client, "?sort=name&order=asc")[0][:3] == ["job-000", "job-001", "job-002"]
    assert names(client, "?sort=name&order=desc")[0][0] == "job-119"
    html = client.get("/?sort=name&order=asc&status=failed").get_data(as_text=True)
    # a header link keeps the filters and flips the order of the column sorted by
    assert 'href="/?status=failed&amp;sort=name&amp;order=desc"' in html


def test_a_deployed_run_without_the_pulumi_cli_says_so(
    client: FlaskClient, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    deployed._CACHE.clear()
    run_id = names(client, "?kind=cluster")[0][0]
    html = client.get(f"/runs/{_id(client, run_id)}").get_data(as_text=True)
    assert '<p class="warn" id="live-note">live status unavailable: the Pulumi CLI' in html
    assert "pod logs unavailable: the Pulumi CLI" in html


def test_a_deployed_run_shows_its_job_as_status_reads_it(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster and the Pulumi engine are what cannot exist here: `service` is replaced."""
    state = JobState(
        "PyTorchJob",
        "job-007",
        "nlp",
        Outcome.RUNNING,
        (),
        (ReplicaState("worker", 0, "job-007-worker-0", "Running", 1, None, None),),
        None,
    )
    located = object()
    monkeypatch.setattr(service, "locate", lambda *a, **k: located)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda found: service.StackStatus(
            None, "update", "succeeded", None, {"jobName": "job-007"}
        ),  # type: ignore[arg-type]
    )
    recorded = []
    monkeypatch.setattr(
        service, "live", lambda found, record=True: recorded.append(record) or state
    )
    from trainstack.deploy import logs

    monkeypatch.setattr(logs, "show", lambda found, **k: k["write"](b"epoch 1 <b>loss</b>\n"))
    deployed._CACHE.clear()
    html = client.get(f"/runs/{_id(client, 'job-007')}").get_data(as_text=True)
    assert "PyTorchJob nlp/job-007: running" in html and "job-007-worker-0" in html
    assert "epoch 1 &lt;b&gt;loss&lt;/b&gt;" in html and 'id="live-note"' not in html
    assert recorded == [False]  # read, never recorded: the console changes nothing


def _id(client: FlaskClient, name: str) -> str:
    html = client.get(f"/?q={name}").get_data(as_text=True)
    found = re.search(r'<a class="run" href="/runs/([^"]+)">', html)
    assert found is not None
    return found.group(1)
