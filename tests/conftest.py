"""Options and fixtures every test folder shares."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.planmemo import memoized
from tests.schedule import laid_out, use_work_stealing

UPDATE_GOLDEN_ENV = "TRAINSTACK_UPDATE_GOLDEN"
_HOME_ENV = "TRAINSTACK_HOME"
_SESSION_HOME: dict[str, str] = {}


MARKERS = {
    "subprocess": "the test's `cli` fixture runs `python -m trainstack` as a real process "
    "(signals, a closed stdout, orphan and process checks, import-time behaviour); without "
    "it the CLI runs in this process (tests/clirunner.py)",
    "slow": "a check that takes tens of seconds on its own (static checks, the wheel, the "
    "browser, the workflow replay), a static check that reads the whole source tree (the "
    "guards of names, pointers, codes, layout, sizes, mypy's scope, runtime dependencies), or "
    "one that starts replicas: the local runner's supervisor, `run --local`, `sweep --local`, "
    "README's main job, the scaffolds' runs, third-party scripts (an unmarked test that starts "
    "one in this process fails: `_quick_loop_starts_no_replica`). First in each worker's share "
    "(tests/schedule.py) so they overlap the rest; `-m 'not slow'` leaves them out of the quick "
    "loop (the README command runs them)",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    # Code a test calls directly, and a `Cli` made when its module is imported, keep their state
    # (the plan cache of the platform's outputs among it) in a folder of this session's, never
    # in the user's home, whatever TRAINSTACK_HOME the shell had. Set before collection, so
    # every module sees it; each xdist worker gets its own.
    os.environ[_HOME_ENV] = _SESSION_HOME.setdefault("home", tempfile.mkdtemp(prefix="ts-home-"))
    use_work_stealing(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = _SESSION_HOME.pop("home", None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's: a run with `-p no:xdist` has no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker more than the cores for the quick loop, twice the cores when the slow
    tests run too. A test that waits (a replica's hang timeout, a rendezvous, a child process, a
    browser) leaves its core idle, and the slow tests wait most of their wall time; more workers
    than that cost more than they give (each collects the suite, and they contend for the
    cores: measured with benchmarks/bench_suite.py)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    quick = "not slow" in (config.getoption("markexpr") or "")
    return cores + 1 if quick else 2 * cores


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The slow checks first in each worker's block (tests/schedule.py): with workers they run
    # beside the rest instead of alone at the end. Every worker lays out the same order.
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = laid_out(items, workers)


@pytest.fixture(autouse=True)
def _quick_loop_starts_no_replica(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick loop (`-m 'not slow'`) runs no replica process: a test that starts one
    through the supervisor in this process is marked slow, or fails here saying so. (A replica
    started by a `python -m trainstack` child is not seen here.)"""
    if request.node.get_closest_marker("slow") is not None:
        return
    from trainstack.local import procgroup

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(
            f"{request.node.nodeid} starts a replica process: mark it @pytest.mark.slow "
            "(the quick loop runs none)"
        )

    monkeypatch.setattr(procgroup, "start", refuse)


@pytest.fixture(autouse=True)
def _platform_planned_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The platform's offline plan made once per worker for each set of its inputs
    (tests/planmemo.py): most plan, policy and infra tests plan the same environments."""
    from trainstack.plan import service

    real = service.plan_platform
    monkeypatch.setattr(service, "plan_platform", memoized(real, tmp_path_factory.getbasetemp()))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files (manifests, expected diagnostics) from what the code gives "
        f"now, instead of comparing; as {UPDATE_GOLDEN_ENV}=1. Review the diff.",
    )


def update_golden(config: pytest.Config) -> bool:
    return bool(config.getoption("--update-golden")) or os.environ.get(UPDATE_GOLDEN_ENV) == "1"


@pytest.fixture
def golden_update(request: pytest.FixtureRequest) -> bool:
    """True when golden files are rewritten: --update-golden or TRAINSTACK_UPDATE_GOLDEN=1."""
    return update_golden(request.config)


@pytest.fixture
def cli(tmp_path: Path, request: pytest.FixtureRequest) -> Cli:
    """The trainstack CLI (tests/clirunner.py) with a state home of this test's own; in this
    process, or as `python -m trainstack` for a test marked `subprocess`."""
    marked = request.node.get_closest_marker("subprocess") is not None
    return Cli(tmp_path / "home", subprocess=marked)
