"""Every string in every rendered manifest stays a string for a YAML 1.1 reader. kubectl and the API
server read YAML with sigs.k8s.io/yaml (go-yaml v2: YAML 1.1's implicit types plus Go's number
parsing); an unquoted `y` or `1e-05` would reach the API server as a bool or a number and the job
would be rejected.

The table below is written from the YAML 1.1 type specs (yaml.org/type/*.html) and go-yaml v2's
resolve.go, independently of trainstack's own check, and drives a reader that resolves plain
scalars by exactly those rules."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
import yaml

from tests.render.conftest import CASES, Case
from trainstack.render import dump_yaml, render_run

STR = "tag:yaml.org,2002:str"

# (tag, the spec's regular expression, examples that match it)
RULES: list[tuple[str, str, list[str]]] = [
    (
        "bool",
        r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        ["y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False"],
    ),
    ("null", r"~|null|Null|NULL|", ["~", "null", "Null", "NULL", ""]),
    ("int", r"[-+]?0b[0-1_]+", ["0b101", "-0b1_0"]),  # base 2
    ("int", r"[-+]?0[0-7_]+", ["017", "0_7", "+012"]),  # base 8
    ("int", r"[-+]?(0|[1-9][0-9_]*)", ["0", "1", "+1", "-42", "1_000", "1234567"]),  # base 10
    ("int", r"[-+]?0x[0-9a-fA-F_]+", ["0x1F", "-0xff_ff"]),  # base 16
    ("int", r"[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+", ["1:20", "190:20:30"]),  # base 60
    (
        "float",
        r"[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?",  # base 10
        ["-.5", ".5", "1.", "6.8523015e+5", "1.0.0", "0.00001"],
    ),
    ("float", r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*", ["190:20:30.15"]),  # base 60
    ("float", r"[-+]?\.(inf|Inf|INF)", [".inf", "-.Inf", "+.INF"]),
    ("float", r"\.(nan|NaN|NAN)", [".nan", ".NaN", ".NAN"]),
    ("timestamp", r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]", ["2001-12-14"]),
    (
        "timestamp",
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?([Tt]|[ \t]+)[0-9][0-9]?"
        r":[0-9][0-9]:[0-9][0-9](\.[0-9]*)?(([ \t]*)Z|[-+][0-9][0-9]?(:[0-9][0-9])?)?",
        ["2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 Z", "2001-1-4T1:59:43"],
    ),
    ("merge", r"<<", ["<<"]),
    ("value", r"=", ["="]),
    # go-yaml v2 (resolve.go): yamlStyleFloat, then strconv.ParseInt(s, 0, 64), which takes
    # Go's 0o/0b/0x prefixes and `_` separators.
    (
        "float",
        r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?",
        ["1e3", "1e-05", "1E5", "08", "09", "-2.5e10"],
    ),
    ("int", r"[-+]?0[oO][0-7_]+", ["0o17", "0O17"]),
    ("int", r"[-+]?0[bB][01_]+", ["0B101"]),
    ("int", r"[-+]?0[xX][0-9a-fA-F_]+", ["0X1f"]),
]
STRINGS = [
    "plain",
    "1.0.0-rc1",
    "v1",
    "yes please",
    "0x",
    "a:b",
    "12-34",
    "e5",
    "inf",
    "nan",
    "1e",
    "python main.py",
    "--lr",
    "-",
    "<",
    "==",
    "0b2",
    "2001-12",
]


class Yaml11Loader(yaml.SafeLoader):
    """Resolves plain scalars by RULES only (composing is enough: tags are all we check)."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}


for _tag, _regex, _ in RULES:
    Yaml11Loader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_regex})$"), None
    )


def _tag_of_plain(text: str) -> str:
    node = yaml.compose(text, Loader=Yaml11Loader)
    assert node is not None
    return str(node.tag)


EXAMPLES = [(tag, regex, ex) for tag, regex, examples in RULES for ex in examples]


@pytest.mark.parametrize(
    ("tag", "regex", "example"), EXAMPLES, ids=[f"{t}:{e!r}" for t, _, e in EXAMPLES]
)
def test_table_is_what_a_yaml11_reader_resolves(tag: str, regex: str, example: str) -> None:
    assert re.fullmatch(regex, example), "the table's example does not match its own rule"
    if example:
        assert _tag_of_plain(example) != STR  # written plain, the reader takes it for a non-string


@pytest.mark.parametrize("value", [ex for _, _, ex in EXAMPLES] + STRINGS)
def test_every_string_is_dumped_so_it_reads_back_as_a_string(value: str) -> None:
    text = dump_yaml([{"key": value, value: "as a key too", "list": [value]}])
    node = yaml.compose(text, Loader=Yaml11Loader)
    assert node is not None
    scalars = [n for pair in node.value for n in pair if isinstance(n, yaml.ScalarNode)]
    scalars += node.value[2][1].value
    assert len(scalars) == 6
    tags = {str(n.tag) for n in scalars}
    assert tags == {STR}, text
    assert yaml.safe_load(text) == {"key": value, value: "as a key too", "list": [value]}


@pytest.mark.parametrize("value", [s for s in STRINGS if s != "-"])
def test_ordinary_strings_stay_plain(value: str) -> None:
    # Quoting is for what would be misread; ordinary text keeps the readable plain form.
    assert dump_yaml([{"k": value}]) in (f"---\nk: {value}\n",)


def _strings_are_strings(node: yaml.Node, obj: object, where: str) -> int:
    if isinstance(obj, dict):
        assert isinstance(node, yaml.MappingNode), where
        count = 0
        for (key_node, value_node), (key, value) in zip(node.value, obj.items(), strict=True):
            count += _strings_are_strings(key_node, key, where)
            count += _strings_are_strings(value_node, value, f"{where}.{key}")
        return count
    if isinstance(obj, list):
        assert isinstance(node, yaml.SequenceNode), where
        return sum(
            _strings_are_strings(n, v, f"{where}[{i}]")
            for i, (n, v) in enumerate(zip(node.value, obj, strict=True))
        )
    if isinstance(obj, str):
        assert node.tag == STR, f"{where}: {obj!r} reads back as {node.tag}"
        return 1
    return 0


def test_every_string_of_every_golden_reads_back_as_a_string(case: Case) -> None:
    docs = render_run(case.run(), options=case.options)
    text = dump_yaml(docs)
    composed = list(yaml.compose_all(text, Loader=Yaml11Loader))
    assert (
        sum(_strings_are_strings(n, d, d["kind"]) for n, d in zip(composed, docs, strict=True)) > 20
    )
    assert list(yaml.safe_load_all(text)) == docs  # PyYAML's own YAML 1.1 loader agrees


def test_the_yaml11_case_is_among_the_goldens() -> None:
    assert any(c.name == "yaml11-strings" for c in CASES)
