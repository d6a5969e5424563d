"""Golden manifests; regenerate with TRAINSTACK_UPDATE_GOLDEN=1 and review the diff."""

from __future__ import annotations

import os

from tests.render.conftest import GOLDEN, Case
from trainstack.render import dump_yaml, render_run

UPDATE = os.environ.get("TRAINSTACK_UPDATE_GOLDEN") == "1"


def test_golden(case: Case) -> None:
    text = dump_yaml(render_run(case.run(), options=case.options))
    path = GOLDEN / f"{case.name}.yaml"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with TRAINSTACK_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{case.name} differs from {path}"
