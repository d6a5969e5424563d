"""No function in trainstack/ runs past 100 lines: one that does is doing
several jobs, and is split by responsibility, not at an arbitrary line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import trainstack

LIMIT = 100
PACKAGE = Path(trainstack.__file__).parent


def too_long(source: str) -> list[tuple[str, int]]:
    """Each function (nested ones too) longer than LIMIT lines, from its `def` line to its last,
    with that length."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LIMIT
    ]


@pytest.mark.slow  # a static check over the whole source tree
def test_no_function_is_over_100_lines() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}: {name} ({lines} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, lines in too_long(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "split by responsibility:\n" + "\n".join(found)


def test_the_measure_counts_from_def_to_the_last_line() -> None:
    def source(body_lines: int) -> str:
        body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
        method = body.replace("    ", "        ")
        return f"@decorated\ndef f() -> None:\n{body}\n\nclass C:\n    async def g(self):\n{method}"

    assert too_long(source(LIMIT - 1)) == []  # def + 99 lines: 100
    assert too_long(source(LIMIT)) == [("f", LIMIT + 1), ("g", LIMIT + 1)]
