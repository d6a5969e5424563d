"""Check a document's shape against the cerberus schema; turn cerberus errors into diagnostics."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from trainstack import suggest
from trainstack.errors import Diagnostic
from trainstack.spec import fastcheck
from trainstack.spec.schema import INT64_MAX, INT64_MIN, SCHEMAS
from trainstack.spec.values import looks_secret
from trainstack.yamlsource import SourceDoc

_VALIDATORS: dict[str, Any] = {}

_TYPE_WORDS = {
    "string": "text",
    "integer": "an integer",
    "float": "a number",
    "boolean": "true or false",
    "dict": "a mapping",
    "list": "a list",
}


def build_validator(kind: str, *, trusted: bool = True) -> Any:
    """A cerberus validator for `kind` (`trusted`: skip cerberus's check of our schema)."""
    from trainstack.spec.cerberus_validator import build

    return build(kind, trusted=trusted)


def _validator(kind: str) -> Any:
    v = _VALIDATORS.get(kind)
    if v is None:
        v = _VALIDATORS[kind] = build_validator(kind)
    return v


def check(doc: SourceDoc, kind: str) -> list[Diagnostic]:
    too_big = [
        doc.diag(
            path,
            f"{_digits(value)} is out of range: integers must fit in 64 bits "
            f"({INT64_MIN} to {INT64_MAX})",
            code="range",
        )
        for path, value in _oversized_integers(doc.data, ())
    ]
    if fastcheck.valid(doc.data, kind):
        return too_big  # cerberus would agree (tests/spec/test_fastcheck.py); it words errors
    v = _validator(kind)
    if v.validate(doc.data, normalize=False):
        return too_big
    return too_big + [_diagnostic(doc, kind, e) for e in _leaves(v._errors)]


def _oversized_integers(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], int]]:
    """One rule for every integer in a document, whatever the field: it fits in 64 bits."""
    if isinstance(node, bool):
        return
    if isinstance(node, int):
        if not INT64_MIN <= node <= INT64_MAX:
            yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _oversized_integers(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _oversized_integers(value, (*path, i))


def _digits(value: int) -> str:
    # Not the digits themselves: thousands of them say nothing, and past 4,300 Python refuses
    # to print them at all.
    bits = abs(value).bit_length()
    if bits < 4_000:
        return f"an integer of {len(str(abs(value)))} digits"
    return f"an integer of about {int(bits * 0.30103) + 1:,} digits"


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


def _elsewhere(kind: str, path: tuple[Any, ...]) -> str | None:
    """For a field unknown at the top of one section that is a field of another (`spec.tags`:
    tags are metadata), where it belongs."""
    if len(path) != 2:
        return None
    here, field = path
    for section, rule in (SCHEMAS[kind] or {}).items():
        fields = rule.get("schema") if isinstance(rule, dict) else None
        if section != here and isinstance(fields, dict) and field in fields:
            return f"{field} belongs under {section}: {section}.{field}"
    return None


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


def _withheld(value: Any) -> str:
    return "the value (withheld: it may be a credential)"


def _secret_env_value(path: tuple[Any, ...], e: Any) -> bool:
    """A spec.env value whose name looks secret (rules/run.py refuses it; never show it)."""
    return (
        len(path) == 3
        and path[:2] == ("spec", "env")
        and isinstance(path[2], str)
        and looks_secret(path[2])
        and "keysrules" not in tuple(e.schema_path)
    )


def _diagnostic(doc: SourceDoc, kind: str, e: Any) -> Diagnostic:
    from cerberus import errors as cerr

    path = tuple(e.document_path)
    rule_schema = _schema_at(kind, tuple(e.schema_path)[:-1]) or {}
    field = str(path[-1]) if path else ""
    redact = bool((rule_schema.get("meta") or {}).get("redact")) or _secret_env_value(path, e)
    show = _withheld if redact else _show
    if e.code == cerr.UNKNOWN_FIELD.code:
        allowed = _schema_at(kind, tuple(e.schema_path)) or {}
        hint = (
            _elsewhere(kind, path)
            or suggest.hint(field, allowed)
            or "allowed here: " + ", ".join(sorted(allowed))
            if isinstance(allowed, dict)
            else None
        )
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
        got = "(value withheld: it may be a credential)" if redact else _show(value)
        return doc.diag(
            path, f"expected {words}, got {_type_name(value)} {got}", hint=hint, code="type"
        )
    if rule == "allowed":
        choices = [str(c) for c in e.constraint]
        hint = suggest.hint(value, choices) if isinstance(value, str) else None
        return doc.diag(
            path, f"{show(value)} is not one of: {', '.join(choices)}", hint=hint, code="allowed"
        )
    if rule == "regex":
        expect = (rule_schema.get("meta") or {}).get("expect", f"text matching {e.constraint}")
        return doc.diag(
            path,
            f"{show(value)} is not valid: expected {expect}",
            code="format",
            key="keysrules" in e.schema_path,
        )
    if rule in ("min", "max"):
        op = "at least" if rule == "min" else "at most"
        return doc.diag(
            path, f"{show(value)} is out of range: must be {op} {e.constraint}", code="range"
        )
    if rule in ("minlength", "maxlength"):
        op = "at least" if rule == "minlength" else "at most"
        unit = "characters" if isinstance(value, str) else "entries"
        return doc.diag(
            path, f"has {len(value)} {unit}; must have {op} {e.constraint}", code="length"
        )
    if rule == "nullable":
        return doc.diag(
            path,
            f"{field!r} has no value (null)",
            hint="give a value or remove the field",
            code="null",
        )
    if rule == "empty":
        return doc.diag(path, "must not be empty", code="empty")
    return doc.diag(path, f"invalid value {show(value)} (rule {rule}: {e.constraint})")
