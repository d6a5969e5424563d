"""A compiled yes/no structure check, equivalent to cerberus on the schemas in `schema.py`.

cerberus is thorough but slow: it builds a child validator for every nested mapping and list,
which is most of `trainstack validate`'s time on a valid spec. This module compiles the same
schemas, rule by rule with cerberus's semantics (as used there), into plain closures that only
answer "valid?". A valid document never needs cerberus; an invalid one is handed to cerberus for
the located, worded diagnostics. `tests/spec/test_fastcheck.py` checks the two agree on every
fixture and on thousands of mutated documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any

from trainstack.spec.schema import SCHEMA_RULES, SCHEMAS

Check = Callable[[Any], bool]

# cerberus's types as structure.py configures them: a boolean is not a number.
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float | int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "dict": lambda v: isinstance(v, Mapping),
    "list": lambda v: isinstance(v, Sequence) and not isinstance(v, str),
}


def compile_fields(fields: Mapping[str, Any]) -> Check:
    """A mapping with exactly these fields (unknown keys refused, required ones present)."""
    checks = {name: compile_rule(rule) for name, rule in fields.items()}
    required = tuple(name for name, rule in fields.items() if rule.get("required"))

    def check(doc: Any) -> bool:
        for key, value in doc.items():
            rule = checks.get(key)
            if rule is None or not rule(value):
                return False
        return all(name in doc for name in required)

    return check


def compile_rule(rule: Mapping[str, Any]) -> Check:
    unknown = set(rule) - SCHEMA_RULES
    if unknown:
        raise ValueError(f"fastcheck does not implement cerberus rule(s) {sorted(unknown)}")
    names = rule.get("type", [])
    names = [names] if isinstance(names, str) else list(names)
    types = tuple(_TYPES[n] for n in names)
    empty = rule.get("empty")
    allowed = rule.get("allowed")
    pattern = re.compile(rule["regex"]) if "regex" in rule else None
    lo, hi = rule.get("min"), rule.get("max")
    min_len, max_len = rule.get("minlength"), rule.get("maxlength")
    inner = rule.get("schema")
    items = mapping = None
    if isinstance(inner, Mapping):
        # cerberus applies `schema` by the value's shape: a list's items, or a mapping's fields.
        items = compile_rule(inner) if "list" in names else None
        mapping = compile_fields(inner) if "dict" in names else None
    keys = compile_rule(rule["keysrules"]) if "keysrules" in rule else None
    values = compile_rule(rule["valuesrules"]) if "valuesrules" in rule else None

    def check(value: Any) -> bool:
        if value is None:
            return False  # nullable is False throughout
        if types and not any(t(value) for t in types):
            return False
        # `empty` on an empty value: refuse it, or skip the rules an empty value cannot meet.
        is_empty = empty is not None and isinstance(value, Sized) and len(value) == 0
        if is_empty and not empty:
            return False
        if not is_empty:
            if allowed is not None:
                if isinstance(value, Iterable) and not isinstance(value, str):
                    if any(x not in allowed for x in value):
                        return False
                elif value not in allowed:
                    return False
            if pattern is not None and isinstance(value, str) and not pattern.fullmatch(value):
                return False
            if isinstance(value, Iterable):
                if min_len is not None and len(value) < min_len:  # type: ignore[arg-type]
                    return False
                if max_len is not None and len(value) > max_len:  # type: ignore[arg-type]
                    return False
        try:
            if lo is not None and value < lo:
                return False
            if hi is not None and value > hi:
                return False
        except TypeError:
            pass  # cerberus ignores bounds it cannot compare (a duration text against 1)
        if isinstance(value, Sequence) and not isinstance(value, str):
            if items is not None and not all(items(v) for v in value):
                return False
        elif isinstance(value, Mapping):
            if mapping is not None and not mapping(value):
                return False
            if keys is not None and not all(keys(k) for k in value):
                return False
            if values is not None and not all(values(v) for v in value.values()):
                return False
        return True

    return check


_COMPILED: dict[str, Check] = {}


def valid(data: Any, kind: str) -> bool:
    """Whether cerberus would accept `data` (a mapping) against SCHEMAS[kind]."""
    check = _COMPILED.get(kind)
    if check is None:
        check = _COMPILED[kind] = compile_fields(SCHEMAS[kind])
    return isinstance(data, Mapping) and check(data)
