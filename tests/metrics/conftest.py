from __future__ import annotations

from pathlib import Path

import pytest

from tests.local.conftest import Cli
from tests.local.helpers import write_run

CHARTS = Path(__file__).parent / "fixtures" / "charts" / "component.yaml"


def charts_run(directory: Path, name: str, **parameters: object) -> Path:
    return write_run(directory, str(CHARTS), name, parameters=parameters)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home")
