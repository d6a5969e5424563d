"""Registries for the console's tests: real local runs (the charts fixture component) with
hostile strings in their description, tags and logs, and the registry API for the rest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.browser import DevTools
from tests.clirunner import Cli
from tests.local.helpers import write_run
from tests.metrics.conftest import CHARTS
from trainstack.registry import Registry
from trainstack.ui.app import UiConfig, create_app

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
LOOPBACK = {"Host": "127.0.0.1:8765"}


@dataclass(frozen=True)
class Runs:
    home: Path
    a: str  # demo-a: scale 1, a hostile tag, log line and (in its job file) description
    b: str  # demo-b: scale 2


def real_run(cli: Cli, tmp: Path, name: str, scale: float, seconds: float = 1.0) -> str:
    spec = write_run(
        tmp,
        str(CHARTS),
        name,
        metadata={
            "description": "demo run",
            "experiment": "charts-demo",
            "tags": {"team": "vision", "note": HOSTILE},
        },
        parameters={"layout": "good", "scale": scale, "seconds": seconds},
    )
    done = cli("run", spec, "--local", timeout=180)
    assert done.returncode == 0, done.stderr
    with Registry.open(cli.home or tmp) as reg:
        return reg.resolve(name).id


@pytest.fixture(scope="package")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("ui")
    cli = Cli(tmp / "home")
    cli.env["TRAINSTACK_USAGE_SECONDS"] = "0.2"  # usage samples in half a second of run
    a = real_run(cli, tmp, "demo-a", 1.0, seconds=0.5)
    b = real_run(cli, tmp, "demo-b", 2.0, seconds=0.5)
    run_dir = tmp / "home" / "runs" / a
    with (run_dir / "logs" / "worker-0.log").open("a") as fh:
        fh.write(f"a hostile line {HOSTILE}\n")
    # The spec refuses markup in a description; the run's code can still rewrite its files.
    job = run_dir / "input" / "config" / "training_job.json"
    doc = json.loads(job.read_text())
    job.write_text(json.dumps({**doc, "description": f"demo {HOSTILE}"}))
    return Runs(tmp / "home", a, b)


@pytest.fixture
def client(runs: Runs) -> Iterator[FlaskClient]:
    app = create_app(UiConfig(home=runs.home))
    with app.test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


@contextmanager
def console(home: Path) -> Iterator[str]:
    """The console's URL, serving `home` on 127.0.0.1 until the block ends (tests/ui/serving.py)."""
    from tests.ui.serving import serving

    with serving(home) as (host, port):
        yield f"http://{host}:{port}/"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    """One headless Chromium tab per module (tests/browser.py)."""
    with DevTools(tmp_path_factory.mktemp("chromium")) as tab:
        yield tab
