"""Check a document's shape against the cerberus schema; turn cerberus errors into diagnostics."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import cerberus
from cerberus import TypeDefinition
from cerberus import errors as cerr
from cerberus.schema import DefinitionSchema

from trainstack.errors import Diagnostic
from trainstack.spec.schema import SCHEMAS
from trainstack.spec.suggest import closest
from trainstack.spec.yamlsource import SourceDoc

_VALIDATORS: dict[str, Any] = {}

_TYPE_WORDS = {"string": "text", "integer": "an integer", "float": "a number",
               "boolean": "true or false", "dict": "a mapping", "list": "a list"}


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


def build_validator(kind: str, *, trusted: bool = True) -> Any:
    if not trusted:
        return _SpecValidator(SCHEMAS[kind])
    v = _SpecValidator()
    v.schema = _TrustedSchema(v, SCHEMAS[kind])
    return v


def _validator(kind: str) -> Any:
    v = _VALIDATORS.get(kind)
    if v is None:
        v = _VALIDATORS[kind] = build_validator(kind)
    return v


def check(doc: SourceDoc, kind: str) -> list[Diagnostic]:
    v = _validator(kind)
    if v.validate(doc.data, normalize=False):
        return []
    return [_diagnostic(doc, kind, e) for e in _leaves(v._errors)]


def _leaves(errors: Iterable[Any]) -> Iterator[Any]:
    for e in errors:
        if e.is_group_error:
            yield from _leaves(e.child_errors)
        else:
            yield e


def _schema_at(kind: str, schema_path: tuple[Any, ...]) -> Any:
    node: Any = SCHEMAS[kind]
    for part in schema_path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "nothing" if value is None else type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _diagnostic(doc: SourceDoc, kind: str, e: Any) -> Diagnostic:
    path = tuple(e.document_path)
    rule_schema = _schema_at(kind, tuple(e.schema_path)[:-1]) or {}
    field = str(path[-1]) if path else ""
    if e.code == cerr.UNKNOWN_FIELD.code:
        allowed = _schema_at(kind, tuple(e.schema_path)) or {}
        best = closest(field, allowed) if isinstance(allowed, dict) else None
        hint = f"did you mean {best!r}?" if best else (
            "allowed here: " + ", ".join(sorted(allowed)) if isinstance(allowed, dict) else None)
        return doc.diag(path, f"unknown field {field!r}", hint=hint, key=True, code="unknown-key")
    if e.code == cerr.REQUIRED_FIELD.code:
        return doc.diag(path, f"required field {field!r} is missing", code="required")
    value = e.value
    rule = e.rule
    if rule == "type":
        wanted = e.constraint if isinstance(e.constraint, list) else [e.constraint]
        names = [_TYPE_WORDS.get(str(w), str(w)) for w in wanted]
        words = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        hint = None
        if isinstance(value, str) and "integer" in wanted and value.strip().lstrip("-").isdigit():
            hint = "remove the quotes"
        elif wanted == ["string"] and value is not None:
            hint = "quote the value"
        elif value is None:
            hint = "give a value or remove the field"
        return doc.diag(path, f"expected {words}, got {_type_name(value)} {_show(value)}",
                        hint=hint, code="type")
    if rule == "allowed":
        choices = [str(c) for c in e.constraint]
        best = closest(str(value), choices) if isinstance(value, str) else None
        hint = f"did you mean {best!r}?" if best else None
        return doc.diag(path, f"{_show(value)} is not one of: {', '.join(choices)}", hint=hint,
                        code="allowed")
    if rule == "regex":
        expect = (rule_schema.get("meta") or {}).get("expect", f"text matching {e.constraint}")
        return doc.diag(path, f"{_show(value)} is not valid: expected {expect}", code="format",
                        key="keysrules" in e.schema_path)
    if rule in ("min", "max"):
        op = "at least" if rule == "min" else "at most"
        return doc.diag(path, f"{_show(value)} is out of range: must be {op} {e.constraint}",
                        code="range")
    if rule in ("minlength", "maxlength"):
        op = "at least" if rule == "minlength" else "at most"
        unit = "characters" if isinstance(value, str) else "entries"
        return doc.diag(path, f"has {len(value)} {unit}; must have {op} {e.constraint}",
                        code="length")
    if rule == "nullable":
        return doc.diag(path, f"{field!r} has no value (null)", hint="give a value or remove "
                        "the field", code="null")
    if rule == "empty":
        return doc.diag(path, "must not be empty", code="empty")
    return doc.diag(path, f"invalid value {_show(value)} (rule {rule}: {e.constraint})")
