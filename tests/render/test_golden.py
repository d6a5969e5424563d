"""Golden manifests; regenerate with `pytest --update-golden` (or TRAINSTACK_UPDATE_GOLDEN=1)
and review the diff."""

from __future__ import annotations

from tests.render.conftest import GOLDEN, Case
from trainstack.render import dump_yaml, render_run


def test_golden(case: Case, golden_update: bool) -> None:
    text = dump_yaml(render_run(case.run(), options=case.options))
    path = GOLDEN / f"{case.name}.yaml"
    if golden_update:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run pytest with --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{case.name} differs from {path}"
