from __future__ import annotations

from pathlib import Path

import pytest

from trainstack.spec import load_run
from trainstack.spec.model import Run

SPECS = Path(__file__).parent / "specs"


@pytest.fixture
def load():
    def _load(rel: str) -> Run:
        return load_run(SPECS / rel)

    return _load
