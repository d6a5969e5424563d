"""JSON Schema (draft 2020-12) generated from the cerberus schemas in `schema.py`.

For editors (completion, inline errors) and other tools. It carries the structural rules — the
fields, their types, required fields, allowed values, patterns, ranges and lengths. Rules that
relate fields to each other or a run to its component (env-var collisions, constraints,
parameter values against declarations) are only checked by `trainstack validate`.
"""

from __future__ import annotations

from typing import Any

from trainstack.spec.schema import API_VERSION, SCHEMA_RULES, SCHEMAS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "boolean": "boolean",
    "dict": "object",
    "list": "array",
}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema for `kind` ("Component" or "Run")."""
    if kind not in SCHEMAS:
        raise KeyError(kind)
    out: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": f"https://trainstack.dev/schemas/v1/{kind.lower()}.json",
        "title": f"trainstack {kind} ({API_VERSION})",
    }
    out.update(_fields(SCHEMAS[kind]))
    return out


def _fields(fields: dict[str, Any]) -> dict[str, Any]:
    """An object whose properties are `fields` (a cerberus dict schema); unknown keys refused,
    as cerberus does by default."""
    out: dict[str, Any] = {
        "type": "object",
        "properties": {name: _rule(rule) for name, rule in fields.items()},
        "additionalProperties": False,
    }
    required = [name for name, rule in fields.items() if rule.get("required")]
    if required:
        out["required"] = required
    return out


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    unknown = set(rule) - SCHEMA_RULES
    if unknown:
        raise ValueError(f"no JSON Schema translation for cerberus rule(s) {sorted(unknown)}")
    types = rule.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    out: dict[str, Any] = {}
    expect = (rule.get("meta") or {}).get("expect")
    if expect:
        out["description"] = f"Expected: {expect}."
    if types:
        names = [_TYPES[t] for t in types]
        out["type"] = names[0] if len(names) == 1 else names
    if "allowed" in rule:
        out["enum"] = list(rule["allowed"])
    if "regex" in rule:
        # cerberus matches the whole value; JSON Schema patterns search, so anchor them.
        out["pattern"] = f"^(?:{rule['regex']})$"
    if "min" in rule:
        out["minimum"] = rule["min"]
    if "max" in rule:
        out["maximum"] = rule["max"]
    # Length keywords only apply to their own JSON type, so they can sit side by side when a
    # field accepts several types (`code` is a string or a mapping).
    for cerberus_rule, by_type in (
        ("minlength", ("minLength", "minItems", "minProperties")),
        ("maxlength", ("maxLength", "maxItems", "maxProperties")),
    ):
        if cerberus_rule in rule:
            out.update(_by_type(types, by_type, rule[cerberus_rule]))
    if rule.get("empty") is False:
        for key, value in _by_type(types, ("minLength", "minItems", "minProperties"), 1).items():
            out.setdefault(key, value)
    inner = rule.get("schema")
    if isinstance(inner, dict):
        if "dict" in types:
            out.update({k: v for k, v in _fields(inner).items() if k != "type"})
        elif "list" in types:
            out["items"] = _rule(inner)
    if isinstance(rule.get("keysrules"), dict):
        keys = {k: v for k, v in _rule(rule["keysrules"]).items() if k != "type"}
        if keys:
            out["propertyNames"] = keys
    if isinstance(rule.get("valuesrules"), dict):
        out["additionalProperties"] = _rule(rule["valuesrules"])
    return out


def _by_type(types: list[str], keywords: tuple[str, str, str], value: int) -> dict[str, int]:
    text, array, obj = keywords
    out: dict[str, int] = {}
    if "string" in types or not types:
        out[text] = value
    if "list" in types:
        out[array] = value
    if "dict" in types:
        out[obj] = value
    return out
