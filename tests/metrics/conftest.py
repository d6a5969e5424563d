from __future__ import annotations

from pathlib import Path

from tests.local.helpers import write_run

CHARTS = Path(__file__).parent / "fixtures" / "charts" / "component.yaml"


def charts_run(directory: Path, name: str, **parameters: object) -> Path:
    return write_run(directory, str(CHARTS), name, parameters=parameters)
