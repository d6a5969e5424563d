"""Options and fixtures every test folder shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.clirunner import Cli

UPDATE_GOLDEN_ENV = "TRAINSTACK_UPDATE_GOLDEN"


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
def cli(tmp_path: Path) -> Cli:
    """The trainstack CLI (tests/clirunner.py) with a state home of this test's own."""
    return Cli(tmp_path / "home")
