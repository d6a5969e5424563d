"""Mutations of valid spec documents, shared by the property tests."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from tests.spec.specfiles import VALID
from trainstack.spec.discover import spec_files

FIXTURES = sorted(spec_files([VALID]))

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "",
            "-",
            "_x",
            "1.0",
            "10000;23456",
            "oss://",
            "file://./data/",
            "../..",
            "pytorch",
            "Int",
            "worker",
            "16Gi",
            "true",
            "PAI_X",
            "$PAI_INPUT_X",
            "x" * 300,
        ]
    )
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn, data: Any) -> Any:
    doc = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _at(doc, path[:-1]), path[-1]
        op = draw(
            st.sampled_from(
                ["delete", "replace", "unknown", "swap", "nest", "wrap", "stringify", "null"]
            )
        )
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = draw(values)
        elif op == "unknown" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(values)
        elif op == "swap":
            other = draw(st.sampled_from(paths))
            parent[key] = copy.deepcopy(_at(doc, other)) if other[: len(path)] != path else None
        elif op == "nest":
            value: Any = parent[key]
            for _ in range(draw(st.integers(1, 40))):
                value = [value] if draw(st.booleans()) else {"k": value}
            parent[key] = value
        elif op == "wrap":
            parent[key] = [parent[key]]
        elif op == "stringify":
            parent[key] = str(parent[key])
        else:
            parent[key] = None
    return doc
