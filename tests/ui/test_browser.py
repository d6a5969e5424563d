"""The console in headless Chromium (tests/browser.py's DevTools driver) against a real server:
the runs page, a run page with its charts, a log that grows while the page is open, compare;
no console errors (a CSP refusal is one), chart pixels on screen, hostile strings as text."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.browser import DevTools, pixels_of
from tests.ui.conftest import HOSTILE, Runs, console
from tests.ui.fixtures import wide_run
from trainstack.registry import NewRun, Registry, ReplicaExit, current_runner
from trainstack.ui.server import listen

pytestmark = pytest.mark.slow  # headless Chromium

BLUE, ORANGE = np.array([0x1F, 0x77, 0xB4]) / 255, np.array([0xFF, 0x7F, 0x0E]) / 255


@pytest.fixture(scope="module")
def base(runs: Runs) -> Iterator[str]:
    with console(runs.home) as url:
        yield url


def test_the_runs_page_shows_hostile_tags_as_text(browser: DevTools, base: str, runs: Runs) -> None:
    browser.errors.clear()
    browser.open(base)
    assert browser.evaluate("document.querySelectorAll('a.run').length") == 2
    assert HOSTILE in browser.evaluate("document.getElementById('runs').innerText")
    assert browser.evaluate("window.pwned === undefined && document.scripts.length === 0")
    assert browser.errors == []


def test_a_run_page_draws_its_charts(browser: DevTools, base: str, runs: Runs) -> None:
    browser.errors.clear()
    browser.open(f"{base}runs/{runs.a}")
    sizes = browser.evaluate("[...document.images].map(i => i.naturalWidth)")
    assert sizes == [800, 800, 800], sizes
    assert f"demo {HOSTILE}" == browser.evaluate("document.getElementById('description').innerText")
    assert f"a hostile line {HOSTILE}" in browser.evaluate(
        "document.getElementById('log').innerText"
    )
    assert browser.evaluate("window.pwned === undefined")
    browser.evaluate("document.getElementById('charts').scrollIntoView()")
    shot = browser.screenshot()
    assert pixels_of(shot, BLUE).sum() > 500 and pixels_of(shot, ORANGE).sum() > 500
    assert browser.errors == []


def test_a_growing_log_appears_while_the_page_is_open(
    browser: DevTools, base: str, runs: Runs, tmp_path: Path
) -> None:
    """A running run (its runner: this process, alive) whose replica's log grows."""
    with Registry.open(runs.home) as reg:
        rec = reg.create(
            NewRun(name="growing", component="charts", component_version="1.0.0"),
            runner=current_runner(),
        )
        reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
    assert rec.run_dir is not None
    log = rec.run_dir / "logs" / "worker-0.log"
    log.parent.mkdir(parents=True)
    log.write_text("step 1\n")
    browser.errors.clear()
    browser.open(f"{base}runs/{rec.id}")
    assert browser.evaluate("document.getElementById('log').textContent") == "step 1\n"
    with log.open("a") as fh:
        fh.write(f"step 2 {HOSTILE}\n")
    browser.wait_for("document.getElementById('log').textContent.includes('step 2')", 20)
    with log.open("a") as fh:
        fh.write("step 3\n")
    browser.wait_for("document.getElementById('log').textContent.includes('step 3')", 20)
    text = browser.evaluate("document.getElementById('log').textContent")
    assert text == f"step 1\nstep 2 {HOSTILE}\nstep 3\n"
    assert browser.evaluate("window.pwned === undefined")
    with Registry.open(runs.home) as reg:
        reg.finish(rec.id, reg.get(rec.id).status.SUCCEEDED)
    # The page's status says how the run ended, not the "running" it was loaded with.
    browser.wait_for("document.getElementById('status').textContent === 'succeeded'")
    state = browser.evaluate("document.getElementById('follow-state').textContent")
    assert state == "the run has ended: succeeded"
    assert browser.evaluate("document.getElementById('status').className") == (
        "status status-succeeded"
    )
    assert browser.errors == []


def test_compare_draws_one_metric_of_each_run(browser: DevTools, base: str, runs: Runs) -> None:
    browser.errors.clear()
    browser.open(f"{base}compare?run={runs.a}&run={runs.b}&metric=epoch/loss")
    assert browser.evaluate("document.getElementById('overlay').naturalWidth") == 800
    assert "param scale" in browser.evaluate("document.getElementById('compare-table').innerText")
    browser.evaluate("document.getElementById('overlay').scrollIntoView()")
    shot = browser.screenshot()
    assert pixels_of(shot, BLUE).sum() > 300 and pixels_of(shot, ORANGE).sum() > 300
    assert browser.errors == []


def test_a_wide_run_shows_one_replica_at_a_time_the_failed_one_first(
    browser: DevTools, tmp_path: Path
) -> None:
    """32 replicas: the page once stacked 32 usage charts (some 15,000 px); now the failed
    replica's log and chart, and a picker for the others."""
    run_id = wide_run(tmp_path / "home", replicas=32, failed=17)
    listening = listen(tmp_path / "home", None, "127.0.0.1", 0, None)
    threading.Thread(target=listening.server.run, daemon=True).start()
    images = "[...document.images].map(i => [i.alt, i.naturalWidth])"
    log = "document.getElementById('log').innerText"
    try:
        browser.errors.clear()
        browser.open(f"{listening.url}runs/{run_id}")
        assert browser.evaluate(images) == [["usage worker-17", 800]]
        assert "worker-17 last words" in browser.evaluate(log)
        picked = "document.querySelector('#replica-picker strong').innerText"
        assert browser.evaluate(picked) == "worker-17 (exit 1)"
        assert browser.evaluate("document.documentElement.scrollHeight") < 4000
        browser.evaluate(
            "document.querySelector('#replica-picker a[href$=\"replica=worker-3#logs\"]').click()"
        )
        browser.wait_for(
            "location.search === '?replica=worker-3' && document.readyState === 'complete'"
            " && [...document.images].every(i => i.complete)"
        )
        assert browser.evaluate(images) == [["usage worker-3", 800]]
        assert "worker-3 last words" in browser.evaluate(log)
        assert browser.evaluate(picked) == "worker-3"
        assert browser.evaluate("document.documentElement.scrollHeight") < 4000
        assert browser.errors == []
    finally:
        listening.server.close()
