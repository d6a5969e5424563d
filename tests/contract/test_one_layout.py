"""One `/ml` layout: contract/layout.py defines the tree and contract/rundir.py a run directory
on this machine; the local run, the rendered mounts and everything that reads a run directory
(reports, the console, `logs`, sweeps) derive from them instead of spelling paths of their own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trainstack.contract import files, rundir
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


# What a run directory holds by name (contract/layout.py and contract/rundir.py), and the files
# the contract writes into it (contract/files.py).
RUN_DIR_NAMES = {
    value
    for module in (tree, rundir, files)
    for value in vars(module).values()
    if isinstance(value, str) and value and "/" not in value and value != "/ml"
} | {part for p in (tree.CONFIG, tree.INPUT_DATA, tree.INPUT_MODEL) for part in p.split("/")}
OWNERS = {Path(m.__file__).resolve() for m in (tree, rundir, files)}
# The same words naming other things.
ELSEWHERE = {
    ("infra/platform/inputs.py", "config"),  # ~/.kube/config
    ("local/podholder.py", "hosts"),  # the pods' /etc/hosts
    ("sweep/study.py", "logs"),  # a sweep's folder, not a run's
}


def _joins(path: Path) -> list[tuple[int, str]]:
    """`x / "name"` and `os.path.join(..., "name")` with a run directory's name, and the
    contract's file names anywhere in code."""
    module = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(module):
        parts: list[ast.expr] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = [node.right]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.path.join":
            parts = node.args[1:]
        for part in parts:
            if isinstance(part, ast.Constant) and part.value in RUN_DIR_NAMES:
                found.append((node.lineno, part.value))
    found += [
        (line, text)
        for line, text in _code_strings(path)
        if text in (files.TRAINING_JOB, rundir.USAGE)
    ]
    return found


@pytest.mark.slow  # a static check over the whole source tree
def test_nothing_spells_a_run_directorys_paths_but_its_definition() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.resolve() not in OWNERS
        for line, text in _joins(path)
        if (str(path.relative_to(PACKAGE)), text) not in ELSEWHERE
    ]
    assert not found, "use trainstack.contract.rundir:\n" + "\n".join(found)


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
