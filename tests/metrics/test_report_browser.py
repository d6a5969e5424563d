"""`trainstack report` looked at in a real headless browser (Chromium from the system packages;
`.ci/run` installs it): the page loads without errors and its charts are visible."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from tests.browser import HEIGHT, WIDTH, browse, chromium, console_errors, pixels_of
from tests.clirunner import Cli
from tests.metrics.conftest import charts_run

pytestmark = pytest.mark.slow  # a real local run, then Chromium

BLUE, ORANGE = np.array([0x1F, 0x77, 0xB4]) / 255, np.array([0xFF, 0x7F, 0x0E]) / 255


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a real run: two charts (one with two y-axes), 2 s of usage samples."""
    tmp = tmp_path_factory.mktemp("report")
    cli = Cli(tmp / "home")
    done = cli("run", charts_run(tmp, "demo", layout="good", seconds=2.0), "--local")
    assert done.returncode == 0, done.stderr
    out = cli("report", "demo", "-o", tmp / "report.html", timeout=120)
    assert out.returncode == 0, out.stderr
    return tmp / "report.html"


def test_report_is_one_self_contained_file(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", html)
    assert (
        len(re.findall(r'<img class="chart" alt="[^"]+" src="data:image/png;base64,', html)) == 3
    )  # epoch, steps, usage worker-0
    for section in ("Outcome", "Parameters", "Resources", "Metrics", "Resource usage", "Logs"):
        assert f"<h2>{section}</h2>" in html
    assert "epoch/loss" in html and "succeeded" in html and "worker-0 (last" in html
    assert "<th>scale</th><td>1.0</td>" in html and "wrote good metrics" in html


def test_report_loads_without_errors_in_chromium(report: Path, tmp_path: Path) -> None:
    dom = browse(report, "--dump-dom", tmp=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_errors(dom.stderr) == []
    assert "<title>trainstack run demo-" in dom.stdout
    assert dom.stdout.count('class="chart"') == 3


def test_charts_are_visible_in_a_chromium_screenshot(report: Path, tmp_path: Path) -> None:
    shot_path = tmp_path / "shot.png"
    done = browse(report, f"--screenshot={shot_path}", tmp=tmp_path)
    assert done.returncode == 0 and shot_path.is_file(), done.stderr[-2000:]
    shot = image.imread(shot_path)[..., :3]
    assert shot.shape[:2] == (HEIGHT, WIDTH)
    blue, orange = pixels_of(shot, BLUE), pixels_of(shot, ORANGE)
    # Lines in the charts' colours: only the embedded PNGs draw them (the page's CSS does not).
    assert blue.sum() > 500 and orange.sum() > 500, (blue.sum(), orange.sum())
    rows = np.flatnonzero(blue.any(axis=1) | orange.any(axis=1))
    cols = np.flatnonzero(blue.any(axis=0) | orange.any(axis=0))
    area = shot[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    ink = float((area.min(axis=2) < 0.9).mean())
    assert ink > 0.025, ink  # axes, ticks, labels and lines where the charts are


def test_the_screenshot_check_sees_missing_charts(report: Path, tmp_path: Path) -> None:
    """The same page with its images broken shows none of the charts' pixels."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        report.read_text().replace("data:image/png;base64,", "data:image/png;base64,AAAA")
    )
    shot_path = tmp_path / "shot.png"
    assert browse(broken, f"--screenshot={shot_path}", tmp=tmp_path).returncode == 0
    shot = image.imread(shot_path)[..., :3]
    assert pixels_of(shot, BLUE).sum() < 50 and pixels_of(shot, ORANGE).sum() < 50


def test_a_missing_chromium_fails_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(pytest.fail.Exception, match=r"tools/install-chromium"):
        chromium()
