"""The console's pages, in-process (Flask's test client) on a registry of real local runs:
what each page shows, hostile strings shown as text, unknown things as a 404 page."""

from __future__ import annotations

import io
import re
import zipfile

from flask.testing import FlaskClient

from tests.ui.conftest import HOSTILE, Runs
from trainstack.registry.owner import current_user
from trainstack.ui.app import CSP

ESCAPED = "&lt;script&gt;window.pwned=1&lt;/script&gt;"


def text(client: FlaskClient, path: str, status: int = 200) -> str:
    got = client.get(path)
    assert got.status_code == status, (path, got.status_code, got.data[:500])
    return got.get_data(as_text=True)


def test_the_runs_page_lists_and_links_each_run_with_hostile_tags_as_text(
    client: FlaskClient, runs: Runs
) -> None:
    # the experiment: the browser tests add a run of their own to the registry
    html = text(client, "/?experiment=charts-demo")
    for run_id in (runs.a, runs.b):
        assert f'<a class="run" href="/runs/{run_id}">' in html
    assert "runs 1–2 of 2" in html and "charts@1.0.0" in html and "succeeded" in html
    assert ESCAPED in html and HOSTILE not in html and "<script>" not in html
    assert f"only mine ({current_user()})" in html


def test_every_page_carries_a_strict_content_security_policy(client: FlaskClient) -> None:
    got = client.get("/")
    assert got.headers["Content-Security-Policy"] == CSP
    assert "unsafe" not in CSP and "default-src 'none'" in CSP
    assert got.headers["X-Content-Type-Options"] == "nosniff"
    assert "<script" not in got.get_data(as_text=True)  # no inline script anywhere


def test_a_run_page_shows_outcome_parameters_charts_usage_and_log(
    client: FlaskClient, runs: Runs
) -> None:
    html = text(client, f"/runs/{runs.a}")
    assert '<span class="status status-succeeded" id="status">succeeded</span>' in html
    assert "<th>scale</th><td>1.0</td>" in html and "<th>created by</th>" in html
    assert f"demo {ESCAPED}" in html and HOSTILE not in html
    assert "epoch/loss" in html and "no restarts" in html
    charts = re.findall(r'<img class="chart" src="([^"]+)"', html)
    assert charts == [
        f"/runs/{runs.a}/charts/0.png",
        f"/runs/{runs.a}/charts/1.png",
        f"/runs/{runs.a}/usage/worker-0.png",
    ]
    for src in charts:
        png = client.get(src)
        assert png.status_code == 200 and png.mimetype == "image/png"
        assert png.data.startswith(b"\x89PNG") and len(png.data) > 5000
    # The log: shown whole (it is small), the hostile line as text; the run ended: no follow.
    assert "wrote good metrics" in html and f"a hostile line {ESCAPED}" in html
    assert 'data-follow=""' in html and "follow.js" not in html


def test_log_search_download_and_the_zip_of_all_replicas(client: FlaskClient, runs: Runs) -> None:
    html = text(client, f"/runs/{runs.a}?replica=worker-0&search=HOSTILE+line")
    # The match is marked where it is in the line (its case as the log has it).
    assert '<span class="lineno">2</span> a <mark>hostile line</mark> ' + ESCAPED in html
    assert "1 line(s) match" in html and "wrote good metrics" not in html
    whole = client.get(f"/runs/{runs.a}/logs/worker-0.log")
    assert whole.mimetype == "text/plain" and whole.headers["X-Content-Type-Options"] == "nosniff"
    assert whole.data == b"wrote good metrics\na hostile line " + HOSTILE.encode() + b"\n"
    assert "attachment" not in whole.headers.get("Content-Disposition", "")
    download = client.get(f"/runs/{runs.a}/logs/worker-0.log?download=1")
    assert download.headers["Content-Disposition"] == (
        f'attachment; filename="{runs.a}-worker-0.log"'
    )
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/runs/{runs.a}/logs.zip").data))
    assert archive.namelist() == ["worker-0.log"]
    assert archive.read("worker-0.log") == whole.data


def test_the_live_log_route_returns_what_was_appended_since_an_offset(
    client: FlaskClient, runs: Runs
) -> None:
    got = client.get(f"/runs/{runs.b}/logs/worker-0/since?offset=0").get_json()
    assert got == {
        "lines": ["wrote good metrics"],
        "offset": 19,
        "running": False,
        "status": "succeeded",
        "reason": "",
    }
    assert client.get(f"/runs/{runs.b}/logs/worker-0/since?offset=19").get_json()["lines"] == []


def test_experiments_group_runs_and_link_their_list(client: FlaskClient) -> None:
    html = text(client, "/experiments")
    assert '<a href="/?experiment=charts-demo">charts-demo</a></td><td>2</td>' in html
    listed = text(client, "/?experiment=charts-demo")
    assert "trainstack runs: experiment charts-demo" in listed and "runs 1–2 of 2" in listed


def test_compare_shows_parameters_and_metrics_side_by_side_and_one_chart(
    client: FlaskClient, runs: Runs
) -> None:
    html = text(client, f"/compare?run={runs.a}&run={runs.b}")
    assert f"<th></th><th>{runs.a}</th><th>{runs.b}</th>" in html
    assert "<th>param scale</th><td>1.0</td><td>2.0</td>" in html
    assert "<th>epoch/loss</th>" in html
    src = re.search(r'<img class="chart" id="overlay" src="([^"]+)"', html)
    assert src is not None
    chart = client.get(src.group(1).replace("&amp;", "&"))
    assert chart.status_code == 200 and chart.data.startswith(b"\x89PNG")
    alone = text(client, f"/compare?run={runs.a}")
    assert "pick two runs or more" in alone


def test_unknown_runs_charts_and_replicas_are_404_pages(client: FlaskClient, runs: Runs) -> None:
    for path in (
        "/runs/no-such-run",
        f"/runs/{runs.a}/charts/9.png",
        f"/runs/{runs.a}/usage/worker-7.png",
        f"/runs/{runs.a}/logs/evil.log",
        f"/runs/{runs.a}/logs/worker-1/since",
        "/no/such/page",
        "/sweeps/nope",
    ):
        html = text(client, path, 404)
        assert '<p class="error" id="message">' in html and "Traceback" not in html, path
    assert "no run with id &#39;no-such-run&#39;" in text(client, "/runs/no-such-run", 404)


def test_bad_filter_input_is_said_on_the_page(client: FlaskClient) -> None:
    html = text(
        client, "/?experiment=charts-demo&status=bogus&since=soon&tag=novalue&sort=size&page=abc"
    )
    assert "status &#39;bogus&#39; is not one of" in html
    assert "created since: &#39;soon&#39;: expected a duration" in html
    assert "tag &#39;novalue&#39;: expected KEY=VALUE" in html
    assert "cannot sort by &#39;size&#39;" in html and "runs 1–2 of 2" in html
