"""Reading a run in the console: a log without terminal escape codes, search matches marked (as
text, whatever the log or the query holds), trainstack's own lines shown, alone or hidden as
`trainstack logs --system/--no-system` has them, a labelled restart timeline, the followed
run's outcome, a refresh link and the runs page's column chooser."""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import HOSTILE, LOOPBACK, Runs
from tests.ui.serving import home_with_a_log
from trainstack.registry import Registry, Restart, RunStatus
from trainstack.ui.app import UiConfig, create_app

ESCAPED = htmllib.escape(HOSTILE, quote=False)
LOG = (
    b"[trainstack] starting worker-0\n"
    b"\x1b[31mred error\x1b[0m at step 3 \x1b]0;a title\x07\x1b[2K\n"
    b"loss " + HOSTILE.encode() + b" 0.5\n"
    b"[trainstack] worker-0 exited 0\n"
)


@pytest.fixture
def logged(tmp_path: Path) -> Iterator[tuple[FlaskClient, str]]:
    run_id = home_with_a_log(tmp_path / "home", LOG)
    app = create_app(UiConfig(home=tmp_path / "home"))
    with app.test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c, run_id


def page(client: FlaskClient, path: str) -> str:
    got = client.get(path)
    assert got.status_code == 200, got.data[:500]
    return got.get_data(as_text=True)


def shown_log(html: str, element: str) -> str:
    found = re.search(rf'<pre id="{element}"[^>]*>(.*?)</pre>', html, re.S)
    assert found is not None, html
    return found.group(1)


def test_a_log_shows_its_text_without_terminal_escape_codes(
    logged: tuple[FlaskClient, str],
) -> None:
    client, run_id = logged
    log = shown_log(page(client, f"/runs/{run_id}"), "log")
    assert "red error at step 3 \n" in log
    assert "\x1b" not in log and "[31m" not in log and "a title" not in log
    followed = client.get(f"/runs/{run_id}/logs/worker-0/since?offset=0").get_json()
    assert followed["lines"][1] == "red error at step 3 "
    # The file itself is the program's, as written.
    assert client.get(f"/runs/{run_id}/logs/worker-0.log").data == LOG


def test_search_marks_each_match_as_text(logged: tuple[FlaskClient, str]) -> None:
    client, run_id = logged
    log = shown_log(page(client, f"/runs/{run_id}?search=ERROR"), "matches")
    assert '<span class="lineno">2</span> red <mark>error</mark> at step 3 \n' in log
    # A query that is markup is found as text and marked as text, as is the line around it.
    hostile = page(client, f"/runs/{run_id}?search=%3Cscript%3Ewindow")
    log = shown_log(hostile, "matches")
    assert "<mark>&lt;script&gt;window</mark>.pwned=1&lt;/script&gt;" in log
    assert "<script>" not in log and "<img" not in log
    assert log.count("<mark>") == 1


def test_trainstack_lines_only_or_hidden_as_the_cli_filters_them(
    logged: tuple[FlaskClient, str],
) -> None:
    client, run_id = logged
    only = shown_log(page(client, f"/runs/{run_id}?system=only"), "matches")
    assert only.count("[trainstack]") == 2 and "red error" not in only
    hidden_html = page(client, f"/runs/{run_id}?system=hide")
    hidden = shown_log(hidden_html, "matches")
    assert "[trainstack]" not in hidden and "red error" in hidden and "loss" in hidden
    assert '<option value="hide" selected>' in hidden_html
    both = shown_log(page(client, f"/runs/{run_id}?system=hide&search=loss"), "matches")
    assert both.startswith('<span class="lineno">3</span> <mark>loss</mark>')
    # An unknown choice shows every line, as no choice does.
    assert "[trainstack] starting" in shown_log(page(client, f"/runs/{run_id}?system=x"), "log")


def test_the_restart_timeline_labels_each_restart(tmp_path: Path) -> None:
    run_id = home_with_a_log(tmp_path / "home", b"")
    with Registry.open(tmp_path / "home") as reg:
        rec = reg.get(run_id)
        start = rec.started_at or rec.created_at
        reg.record_restart(run_id, Restart(start + 30, "worker", 1, 137, "OOMKilled"))
        reg.record_restart(run_id, Restart(start + 90, "worker", 0, None, HOSTILE))
    app = create_app(UiConfig(home=tmp_path / "home"))
    with app.test_client() as client:
        client.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        html = page(client, f"/runs/{run_id}")
    svg = html[html.index('<svg class="timeline"') : html.index("</svg>")]
    labels = re.findall(r'<text class="label"[^>]*>(.*?)</text>', svg)
    assert len(labels) == 2
    assert "worker-1 OOMKilled" in labels[0] and "into the run" in labels[0]
    assert labels[1].endswith(f"worker-0 {ESCAPED}".replace('"', "&#34;"))
    assert "<script>" not in svg


def test_the_follow_route_says_how_the_run_ended(logged: tuple[FlaskClient, str]) -> None:
    client, run_id = logged
    with Registry.open(client.application.config["UI"].home) as reg:
        reg.finish(run_id, RunStatus.FAILED, reason="worker-0 exited 1")
    got = client.get(f"/runs/{run_id}/logs/worker-0/since?offset=0").get_json()
    assert (got["running"], got["status"], got["reason"]) == (False, "failed", "worker-0 exited 1")


def test_every_page_links_to_itself_to_refresh(client: FlaskClient, runs: Runs) -> None:
    for path in ("/", f"/runs/{runs.a}?replica=worker-0&search=loss", "/sweeps", "/nowhere"):
        html = client.get(path).get_data(as_text=True)
        href = re.search(r'<a id="refresh" class="refresh" href="([^"]*)"', html)
        assert href is not None, path
        assert htmllib.unescape(href.group(1)) == path
    # A path that would read as another host's address stays this console's.
    html = client.get("//evil.example/x").get_data(as_text=True)
    href = re.search(r'<a id="refresh" class="refresh" href="([^"]*)"', html)
    assert href is not None and href.group(1).startswith("/") and not href.group(1).startswith("//")


def test_the_runs_page_shows_the_columns_chosen(client: FlaskClient, runs: Runs) -> None:
    every = page(client, "/")
    assert "<th>job type</th>" in every and "<th>tags</th>" in every
    chosen = page(client, "/?cols=1&col=created&col=tags&sort=name&order=asc")
    head = chosen[chosen.index("<thead>") : chosen.index("</thead>")]
    assert re.findall(r"<th>(?:<a [^>]*>)?([^<]*)", head) == [
        "compare",
        "run ↑",
        "status",
        "created",
        "tags",
    ]
    assert 'name="col" value="tags" checked' in chosen
    assert 'name="col" value="duration">' in chosen  # offered, not ticked
    # The sort and page links keep the choice.
    assert "cols=1&amp;col=created&amp;col=tags" in head
    row = chosen[chosen.index("<tbody>") : chosen.index("</tbody>")]
    assert "charts@" not in row and "vision" in row  # no component column; the tags are shown
