"""One `/ml` layout: contract/layout.py defines the tree; the local run
directory and the rendered mounts derive from it instead of spelling paths of their own."""

from __future__ import annotations

import ast
from pathlib import Path

from trainstack.contract import layout as tree
from trainstack.contract.layout import Layout
from trainstack.local import sandbox

PACKAGE = Path(tree.__file__).resolve().parents[1]
# Multi-part paths of the tree (one-word names such as "metrics" are also volume names and labels).
PARTS = ("input/config", "input/data", "input/model", ".staging")


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """String constants in code (docstrings left out: prose may name the paths)."""
    module = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(module)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(module)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_render_local_and_contract_spell_no_tree_path_of_their_own() -> None:
    found = []
    for folder in ("render", "local", "contract"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            if path.resolve() == Path(tree.__file__).resolve():
                continue
            for line, text in _code_strings(path):
                if text == "/ml" or "/ml/" in text or any(p in text for p in PARTS):
                    found.append(f"{path.relative_to(PACKAGE)}:{line}: {text!r}")
    assert not found, "use trainstack.contract.layout:\n" + "\n".join(found)


def test_local_run_directory_is_the_container_tree(tmp_path: Path) -> None:
    local = sandbox.Layout(tmp_path)
    container = Layout.at(tmp_path)
    pairs = [
        (local.usercode, container.code),
        (local.config, container.config),
        (local.metrics, container.metrics),
        (local.input_dir("a"), container.input_dir("a")),
        (local.model_dir("m"), container.model_dir("m")),
        (local.output_dir("o"), container.output_dir("o")),
    ]
    for path, text in pairs:
        assert str(path) + "/" == text
