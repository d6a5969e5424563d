"""The layers ARCHITECTURE.md draws, and no import cycles anywhere in trainstack,
checked by import-linter's contracts in pyproject.toml ([tool.importlinter]). Before these,
deploy -> policy -> plan -> deploy was a cycle, and seven pairs of modules imported each other."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_layer_and_no_cycle_contracts_are_kept(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlinter import cli

    monkeypatch.chdir(ROOT)
    code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "layers KEPT" in out and "no cycles KEPT" in out
    assert "the local runner is its verbs' only KEPT" in out


def test_the_contracts_name_every_top_level_package() -> None:
    # a new package must take its place in the layers, or the contract would not see it
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {p.strip() for layer in layers["layers"] for p in layer.split("|")}
    packages = {
        f"trainstack.{entry.name}"
        for entry in os.scandir(ROOT / "trainstack")
        if entry.is_dir() and (Path(entry.path) / "__init__.py").exists()
    }
    assert packages <= named, sorted(packages - named)
