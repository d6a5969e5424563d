"""Scalars resolve by YAML 1.2 core rules, and every value and key keeps its position."""

from __future__ import annotations

import math

import pytest

from trainstack.yamlsource import Mark, parse


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("y", "y"),  # YAML 1.1 booleans stay text
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("null", None),
        ("Null", None),
        ("~", None),
        ("", None),
        ("10", 10),
        ("+3", 3),
        ("-7", -7),
        ("0x1F", 31),
        ("0o17", 15),
        ("1_000", 1000),
        ("1.5", 1.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("-.inf", -math.inf),
        ("1.0.0", "1.0.0"),
        ("12:30", "12:30"),
        ("١٢", "١٢"),
        ("²", "²"),
        ("0.1.2-rc", "0.1.2-rc"),
        ("'10'", "10"),
        ('"true"', "true"),
        ("!!int 12", 12),
        ("!!str 12", "12"),
    ],
)
def test_scalars_resolve_by_yaml_1_2_core_rules(text: str, value: object) -> None:
    got = parse("t.yaml", f"k: {text}\n").data["k"]
    assert got == value and type(got) is type(value)


def test_nan_is_a_float() -> None:
    assert math.isnan(parse("t.yaml", "k: .nan\n").data["k"])


def test_positions_of_keys_and_values() -> None:
    doc = parse("t.yaml", "a:\n  b: [1, {c: x}]\n")
    assert doc.keys[("a", "b")] == Mark(2, 3)
    assert doc.values[("a", "b", 1, "c")] == Mark(2, 14)
    assert doc.mark(("a", "b", 1, "missing")) == Mark(2, 10)
