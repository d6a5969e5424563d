"""The runs page sorted by a metric (best first, as `runs list --metric`) and filtered to the
runs that have it: the runs under the other filters ranked from their metric summaries, then
paged; runs without the metric last, or left out. Real SQLite and real run folders
(tests/ui/fixtures.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK
from tests.ui.fixtures import metric_run
from trainstack.registry import NewRun, Registry, RunStatus
from trainstack.ui.app import UiConfig, create_app
from trainstack.ui.queries import PER_PAGE


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("ranked") / "home"
    # loss ends at scale / points: the smaller the scale, the better (loss is minimised)
    for i, scale in enumerate((3.0, 1.0, 2.0)):
        metric_run(home, f"loss-{i}", points=10, scale=scale)
    with Registry.open(home) as reg:  # a run without metrics, the newest
        rec = reg.create(NewRun(name="no-metrics", component="c", component_version="1.0.0"))
        reg.mark_running(rec.id, [])
        reg.finish(rec.id, RunStatus.SUCCEEDED)
    return home


@pytest.fixture
def client(home: Path) -> Iterator[FlaskClient]:
    with create_app(UiConfig(home=home)).test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


def names(client: FlaskClient, query: str) -> tuple[list[str], str]:
    html = client.get("/" + query).get_data(as_text=True)
    return re.findall(r'<a class="run" href="/runs/[^"]+">([^<]+)</a>', html), html


def test_sorted_by_a_metric_best_first_runs_without_it_last(client: FlaskClient) -> None:
    ranked, html = names(client, "?metric=train/loss&sort=metric")
    assert ranked == ["loss-1", "loss-2", "loss-0", "no-metrics"]
    assert "train/loss ↓ best first" in html
    worst, _ = names(client, "?metric=train/loss&sort=metric&order=asc")
    assert worst == ["loss-0", "loss-2", "loss-1", "no-metrics"]
    # the column's header is the sort link, keeping the metric
    assert 'href="/?metric=train%2Floss&amp;sort=metric&amp;order=asc"' in html


def test_only_runs_with_the_metric_keeps_the_order_asked_for(client: FlaskClient) -> None:
    newest_first, html = names(client, "?metric=train/loss&has=1")
    assert newest_first == ["loss-2", "loss-1", "loss-0"]
    assert "runs 1–3 of 3" in html
    by_name, _ = names(client, "?metric=train/loss&has=1&sort=name&order=asc")
    assert by_name == ["loss-0", "loss-1", "loss-2"]
    ranked, _ = names(client, "?metric=train/loss&has=1&sort=metric")
    assert ranked == ["loss-1", "loss-2", "loss-0"]


def test_sorting_by_a_metric_without_one_says_so(client: FlaskClient) -> None:
    listed, html = names(client, "?sort=metric")
    assert "sorting by a metric needs one" in html
    assert listed[0] == "no-metrics"  # newest first, as without a sort


def test_a_ranking_is_paged_after_it_is_ranked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    total = PER_PAGE + 5
    for i in range(total):
        metric_run(home, f"r{i:03d}", points=2, scale=float(total - i))  # the last, best
    with create_app(UiConfig(home=home)).test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        first, html = names(client, "?metric=loss&sort=metric")
        second, _ = names(client, "?metric=loss&sort=metric&page=2")
    assert first[0] == f"r{total - 1:03d}" and len(first) == PER_PAGE
    assert second == [f"r{i:03d}" for i in range(4, -1, -1)]
    assert f"runs 1–{PER_PAGE} of {total}" in html
