"""cerberus, configured for specs. Imported only when a document fails `fastcheck`, so a
valid spec never pays for importing cerberus."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import cerberus
from cerberus import TypeDefinition
from cerberus import errors as cerr
from cerberus.schema import DefinitionSchema

from trainstack.spec.schema import SCHEMAS


class _SpecValidator(cerberus.Validator):  # type: ignore[misc]
    """cerberus with YAML-friendly strictness: a boolean is not a number (`replicas: true` is an
    error, not 1), and a regex must match the whole value (cerberus appends `$`, which also
    matches before a trailing newline, so `name: "abc\\n"` would pass)."""

    types_mapping: ClassVar[dict[str, TypeDefinition]] = {
        **cerberus.Validator.types_mapping,
        "integer": TypeDefinition("integer", (int,), (bool,)),
        "float": TypeDefinition("float", (float, int), (bool,)),
    }

    def _validate_regex(self, pattern: str, field: str, value: Any) -> None:
        """{'type': 'string'}"""
        if isinstance(value, str) and _compiled(pattern).fullmatch(value) is None:
            self._error(field, cerr.REGEX_MISMATCH)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    return compiled


class _TrustedSchema(DefinitionSchema):  # type: ignore[misc]
    """A definition schema cerberus does not re-check at every start.

    `cerberus.Validator(schema)` validates the schema itself against cerberus's meta-schema,
    which costs more than validating a spec (about 20 ms, a fifth of `trainstack validate
    ONE.yaml`). Our schemas are constants; `tests/spec/test_structure.py` checks them the full
    way and that this holds the same expanded schema."""

    def __init__(self, validator: Any, schema: dict[str, Any]) -> None:
        self.validator = validator
        self.schema = self.expand(schema)


def build(kind: str, *, trusted: bool = True) -> Any:
    if not trusted:
        return _SpecValidator(SCHEMAS[kind])
    v = _SpecValidator()
    v.schema = _TrustedSchema(v, SCHEMAS[kind])
    return v
