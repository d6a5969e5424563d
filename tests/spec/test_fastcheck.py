"""fastcheck answers exactly as cerberus does on our schemas: on every fixture and on thousands
of mutated documents (so skipping cerberus for valid documents loses no check)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spec.mutations import FIXTURES, mutated, values
from tests.spec.specfiles import INVALID, SPECS
from trainstack.errors import SpecError
from trainstack.spec import fastcheck
from trainstack.spec.structure import build_validator
from trainstack.yamlsource import parse

CHECKED = {kind: build_validator(kind, trusted=False) for kind in ("Component", "Run")}
ALL_FILES = [*FIXTURES, *sorted(INVALID.rglob("*.yaml"))]


def _agree(data: Any, kind: str) -> None:
    assert fastcheck.valid(data, kind) == CHECKED[kind].validate(data, normalize=False), CHECKED[
        kind
    ].errors


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(SPECS)))
def test_agrees_with_cerberus_on_every_fixture(path: Path) -> None:
    try:
        data = parse(str(path), path.read_text(errors="replace")).data
    except SpecError:
        return  # not YAML: never reaches the structure check
    if isinstance(data, dict):
        for kind in ("Component", "Run"):
            _agree(data, kind)


_ORIGINALS = [yaml.safe_load(p.read_text()) for p in FIXTURES]


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_agrees_with_cerberus_on_mutated_documents(data: st.DataObject) -> None:
    doc = data.draw(mutated(data.draw(st.sampled_from(_ORIGINALS))))
    if isinstance(doc, dict):
        _agree(doc, str(doc.get("kind")) if doc.get("kind") in ("Component", "Run") else "Run")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(meta=values, spec=values)
def test_agrees_with_cerberus_on_arbitrary_sections(meta: Any, spec: Any) -> None:
    for kind in ("Component", "Run"):
        _agree(
            {"apiVersion": "trainstack.dev/v1", "kind": kind, "metadata": meta, "spec": spec}, kind
        )


def test_refuses_rules_it_does_not_implement() -> None:
    with pytest.raises(ValueError, match="dependencies"):
        fastcheck.compile_rule({"type": "string", "dependencies": ["x"]})
