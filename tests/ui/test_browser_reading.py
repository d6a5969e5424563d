"""The console read in headless Chromium at 800 px: the runs page fits the window (no sideways
scrolling), and the current page number is as legible as WCAG AA asks of text, measured from the
colours the browser applied."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import DevTools
from tests.ui.conftest import Runs, console
from trainstack.ui.server import listen

pytestmark = pytest.mark.slow  # headless Chromium

NARROW = 800


@pytest.fixture(scope="module")
def base(runs: Runs) -> Iterator[str]:
    with console(runs.home) as url:
        yield url


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    with DevTools(tmp_path_factory.mktemp("chromium"), width=NARROW, height=900) as tab:
        yield tab


def test_the_runs_page_fits_an_800_px_window(narrow: DevTools, base: str) -> None:
    narrow.errors.clear()
    narrow.open(base)
    assert narrow.evaluate("window.innerWidth") == NARROW
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= NARROW, f"the page is {width} px wide in an {NARROW} px window"
    # Every row is still there (the package's runs, and any a test before added), each cell's
    # column named.
    listed = narrow.evaluate("document.querySelectorAll('a.run').length")
    total = narrow.evaluate("document.getElementById('summary').innerText")
    assert listed >= 2 and f"of {listed}" in total
    label = "getComputedStyle(document.querySelector('td[data-label]'), '::before').content"
    assert narrow.evaluate(label) == '"component: "'
    assert narrow.errors == []


def _rgb(css: str) -> tuple[float, float, float, float]:
    found = re.fullmatch(r"rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)", css)
    assert found is not None, css
    r, g, b, a = found.groups()
    return float(r), float(g), float(b), 1.0 if a is None else float(a)


def _luminance(rgb: tuple[float, float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b, _ = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


# The element's text colour, and the background it is drawn on: the nearest ancestor's that is
# not transparent (the page's white at the top).
COLOURS = """(() => {
  const el = document.querySelector(SELECTOR);
  let bg = 'rgb(255, 255, 255)';
  for (let n = el; n; n = n.parentElement) {
    const c = getComputedStyle(n).backgroundColor;
    if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; }
  }
  return [getComputedStyle(el).color, bg];
})()"""


def contrast(tab: DevTools, selector: str) -> float:
    fg, bg = tab.evaluate(COLOURS.replace("SELECTOR", repr(selector)))
    assert _rgb(fg)[3] == 1.0 and _rgb(bg)[3] == 1.0, (fg, bg)
    hi, lo = sorted((_luminance(_rgb(fg)), _luminance(_rgb(bg))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_current_page_number_meets_wcag_aa(narrow: DevTools, base: str) -> None:
    narrow.open(base)
    assert narrow.evaluate("document.querySelector('#pages strong').innerText") == "1"
    assert contrast(narrow, "#pages strong") >= 4.5
    assert contrast(narrow, "#refresh") >= 4.5  # the top bar's links, white on its blue


def test_a_run_page_fits_an_800_px_window(narrow: DevTools, base: str, runs: Runs) -> None:
    narrow.errors.clear()
    narrow.open(f"{base}runs/{runs.a}")
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= NARROW, f"the page is {width} px wide in an {NARROW} px window"
    assert narrow.errors == []


def test_timeline_labels_stay_inside_the_chart(tmp_path: Path) -> None:
    """Restarts near either end: each label is drawn on its side of its mark, within the SVG."""
    from tests.ui.serving import home_with_a_log
    from trainstack.registry import Registry, Restart

    run_id = home_with_a_log(tmp_path / "home", b"")
    with Registry.open(tmp_path / "home") as reg:
        rec = reg.get(run_id)
        start = rec.started_at or rec.created_at
        for i, at in enumerate((1, 2, 500, 999)):
            reg.record_restart(run_id, Restart(start + at, "worker", i, 137, "OOMKilled"))
    listening = listen(tmp_path / "home", None, "127.0.0.1", 0, None)
    threading.Thread(target=listening.server.run, daemon=True).start()
    try:
        with DevTools(tmp_path / "chromium", width=NARROW, height=900) as tab:
            tab.open(f"{listening.url}runs/{run_id}")
            boxes = tab.evaluate(
                "(() => { const s = document.getElementById('timeline').getBoundingClientRect();"
                " return [...document.querySelectorAll('#timeline text')].map(t => {"
                " const b = t.getBoundingClientRect();"
                " return [b.left - s.left, s.right - b.right, b.width]; }); })()"
            )
            assert len(boxes) == 4
            assert all(left >= 0 and right >= 0 and width > 50 for left, right, width in boxes)
            assert tab.errors == []
    finally:
        listening.server.close()
