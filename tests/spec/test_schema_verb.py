"""`trainstack schema component|run`: JSON Schema generated from the cerberus schemas, agreeing
with the loader's structure checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spec.clirun import trainstack
from tests.spec.mutations import FIXTURES, mutated
from tests.spec.specfiles import INVALID, VALID
from trainstack.errors import SpecError
from trainstack.spec import json_schema as js
from trainstack.spec.structure import check
from trainstack.yamlsource import parse


def _validator(kind: str) -> Any:
    return jsonschema.Draft202012Validator(js.json_schema(kind))


@pytest.mark.parametrize("kind", ["component", "run"])
def test_cli_prints_a_draft_2020_12_schema(kind: str) -> None:
    result = trainstack("schema", kind)
    assert result.code == 0, result.err
    schema = json.loads(result.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema == js.json_schema(kind.capitalize())
    assert schema["properties"]["kind"]["enum"] == [kind.capitalize()]


def test_cli_rejects_an_unknown_kind() -> None:
    result = trainstack("schema", "job")
    assert result.code == 2
    assert "'job' is not one of 'component', 'run'" in result.err


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(VALID)))
def test_valid_fixtures_validate_against_the_json_schema(path: Path) -> None:
    data = parse(str(path), path.read_text()).data
    errors = [e.message for e in _validator(data["kind"]).iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("component-unknown-keys", "Additional properties are not allowed ('comand', 'jobtype'"),
        ("component-names", "'My_Component' does not match"),
        ("component-code-git", "'main' does not match"),
        ("component-too-many-parameters", "is too long"),
        ("run-ranges", "10 is greater than the maximum of 9"),
        ("run-ranges-low", "-1 is less than the minimum of 0"),
        ("run-types", "True is not of type 'integer'"),
        ("run-limits", "is too long"),
        ("run-env", "'1BAD' does not match"),
        ("run-name-description", "does not match"),
        ("run-binding-forms", "'copy' is not one of ['mount', 'download']"),
    ],
)
def test_structurally_invalid_fixtures_fail_the_json_schema(name: str, fragment: str) -> None:
    path = INVALID / f"{name}.yaml"
    data = parse(str(path), path.read_text()).data
    messages = [e.message for e in _validator(data["kind"]).iter_errors(data)]
    assert any(fragment in m for m in messages), messages


def test_cross_field_rules_are_left_to_validate() -> None:
    # The env-var collision is a seed rule between fields: the schema cannot say it.
    path = INVALID / "component-env-collision.yaml"
    data = yaml.safe_load(path.read_text())
    assert list(_validator("Component").iter_errors(data)) == []


def test_unknown_cerberus_rules_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(js.SCHEMAS, "Component", {"x": {"type": "string", "coerce": int}})
    with pytest.raises(ValueError, match="coerce"):
        js.json_schema("Component")


def _has_integral_float(node: Any) -> bool:
    if isinstance(node, float):
        return node.is_integer()
    if isinstance(node, dict):
        return any(_has_integral_float(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_integral_float(v) for v in node)
    return False


_ORIGINALS = [yaml.safe_load(p.read_text()) for p in FIXTURES]


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_json_schema_agrees_with_the_structure_check(data: st.DataObject) -> None:
    doc = data.draw(mutated(data.draw(st.sampled_from(_ORIGINALS))))
    text = yaml.safe_dump(doc, allow_unicode=True)
    try:
        source = parse("mutant.yaml", text)
    except SpecError:
        return  # not loadable YAML for a spec (too deep): never reaches either check
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind not in ("Component", "Run") or not isinstance(source.data, dict):
        return
    structure_ok = not check(source, kind)
    schema_ok = _validator(kind).is_valid(source.data)
    if structure_ok:
        assert schema_ok, list(_validator(kind).iter_errors(source.data))
    elif not _has_integral_float(source.data):
        # JSON Schema counts 1.0 as an integer; the loader does not. Otherwise they agree.
        assert not schema_ok, check(source, kind)
