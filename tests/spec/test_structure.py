"""The cerberus schemas themselves: valid cerberus, and the fast start-up path holds exactly what
cerberus's own checked construction holds."""

from __future__ import annotations

import cerberus
import pytest

from trainstack.spec.schema import SCHEMAS
from trainstack.spec.structure import build_validator


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_schemas_pass_cerberus_own_schema_check(kind: str) -> None:
    cerberus.Validator(SCHEMAS[kind])  # raises SchemaError on an invalid rule
    checked = build_validator(kind, trusted=False)
    trusted = build_validator(kind)
    assert trusted.schema.schema == checked.schema.schema


@pytest.mark.parametrize(
    ("kind", "doc"),
    [
        (
            "Run",
            {
                "apiVersion": "trainstack.dev/v1",
                "kind": "Run",
                "metadata": {"name": 1},
                "spec": {"component": "c", "priority": True, "resources": {"m": {"gpu": 1.0}}},
            },
        ),
        (
            "Component",
            {
                "apiVersion": "x",
                "kind": "Component",
                "metadata": {"name": "a\n"},
                "spec": {"jobType": "tf", "code": "", "extra": None},
            },
        ),
    ],
)
def test_trusted_and_checked_validators_report_the_same_errors(
    kind: str, doc: dict[str, object]
) -> None:
    checked = build_validator(kind, trusted=False)
    trusted = build_validator(kind)
    assert not checked.validate(doc, normalize=False)
    assert not trusted.validate(doc, normalize=False)
    assert trusted.errors == checked.errors
