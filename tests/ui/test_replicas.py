"""A run of many replicas shows one replica at a time: the one that failed the run first (its
log tail, then its usage chart), the others a pick away; the real application over a registry
and run folders made through their APIs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK
from tests.ui.fixtures import wide_run
from trainstack.ui.app import UiConfig, create_app


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def client(home: Path) -> Iterator[FlaskClient]:
    with create_app(UiConfig(home=home)).test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


def page(client: FlaskClient, path: str) -> str:
    got = client.get(path)
    assert got.status_code == 200, got.data[:300]
    return got.get_data(as_text=True)


def picker(html: str) -> list[str]:
    found = re.search(r'<p class="replicas" id="replica-picker">(.*?)</p>', html, re.S)
    assert found is not None
    return re.findall(r">([^<]+)</(?:a|strong)>", found.group(1))


def test_a_wide_run_shows_the_failed_replica_first_and_one_usage_chart(
    home: Path, client: FlaskClient
) -> None:
    run_id = wide_run(home, replicas=32, failed=17)
    html = page(client, f"/runs/{run_id}")
    assert re.findall(r'<img class="chart" src="([^"]+)"', html) == [
        f"/runs/{run_id}/usage/worker-17.png"
    ]
    names = picker(html)
    assert names[0] == "worker-17 (exit 1)" and len(names) == 32
    assert names[1:] == [f"worker-{i}" for i in range(32) if i != 17]
    assert "<strong>worker-17 (exit 1)</strong>" in html
    log = html.index('<pre id="log"')
    assert "worker-17 last words" in html[log:] and html.index("usage worker-17") > log
    assert client.get(f"/runs/{run_id}/usage/worker-17.png").data.startswith(b"\x89PNG")
    # Every replica still has its row in the usage table.
    assert all(f"<td>worker-{i}</td>" in html for i in range(32))

    other = page(client, f"/runs/{run_id}?replica=worker-3")
    assert re.findall(r'<img class="chart" src="([^"]+)"', other) == [
        f"/runs/{run_id}/usage/worker-3.png"
    ]
    assert "worker-3 last words" in other and "worker-17 last words" not in other
    assert picker(other)[0] == "worker-17 (exit 1)" and "<strong>worker-3</strong>" in other


def test_the_replica_a_reason_names_is_not_one_whose_name_it_begins_with(
    home: Path, client: FlaskClient
) -> None:
    run_id = wide_run(home, replicas=12, failed=10)
    assert picker(page(client, f"/runs/{run_id}"))[:2] == ["worker-10 (exit 1)", "worker-0"]
