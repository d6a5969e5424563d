"""The runs page's metric column in headless Chromium (tests/browser.py): each run's last and
best value of the chosen metric read from its summary, the column's header sorting best first,
the filter to the runs that have it; no console errors (a CSP refusal is one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import DevTools
from tests.ui.conftest import console
from tests.ui.fixtures import metric_run
from trainstack.metrics import summary
from trainstack.registry import Registry

pytestmark = pytest.mark.slow  # headless Chromium


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("metric") / "home"
    for i, scale in enumerate((3.0, 1.0, 2.0)):
        run_id = metric_run(home, f"loss-{i}", points=10, scale=scale)
        with Registry.open(home) as reg:
            run_dir = reg.get(run_id).run_dir
        assert run_dir is not None
        summary.write(run_dir)  # as a run's end leaves it
    with console(home) as url:
        yield url


ROWS = "[...document.querySelectorAll('a.run')].map(a => a.innerText)"


def test_the_metric_column_sorts_best_first_from_the_summaries(
    browser: DevTools, base: str
) -> None:
    browser.errors.clear()
    browser.open(f"{base}?metric=train/loss")
    assert browser.evaluate(ROWS) == ["loss-2", "loss-1", "loss-0"]  # newest first
    cells = browser.evaluate(
        "[...document.querySelectorAll('#runs tbody tr')].map(r => r.lastElementChild.innerText)"
    )
    assert cells == ["0.2 (best 0.2)", "0.1 (best 0.1)", "0.3 (best 0.3)"]
    # the header's link ranks them, best first
    browser.evaluate(
        "[...document.querySelectorAll('#runs thead a')].find(a =>"
        " a.innerText.startsWith('train/loss')).click()"
    )
    browser.wait_for(f"JSON.stringify({ROWS}) === JSON.stringify(['loss-1','loss-2','loss-0'])")
    assert "best first" in browser.evaluate("document.querySelector('#runs thead').innerText")
    assert browser.errors == []


def test_only_runs_with_the_metric(browser: DevTools, base: str, tmp_path: Path) -> None:
    browser.errors.clear()
    browser.open(f"{base}?metric=no/such&has=1")
    assert browser.evaluate(ROWS) == []
    assert "no runs match" in browser.evaluate("document.getElementById('summary').innerText")
    assert browser.errors == []
