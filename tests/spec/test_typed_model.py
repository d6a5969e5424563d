"""Strings that cross layers are typed: a component's code source, a
binding's scheme and mode are enums in the model, still written as the same words in JSON."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from trainstack.spec import load_component, values
from trainstack.spec.model import Binding, BindingMode, Code, CodeSource, Scheme


def test_model_fields_are_enums() -> None:
    hints = typing.get_type_hints(Binding)
    assert hints["scheme"] is Scheme and hints["mode"] is BindingMode
    assert typing.get_type_hints(Code)["kind"] is CodeSource


def test_parsed_bindings_carry_enums_and_serialise_as_words() -> None:
    b = values.binding("oss://bucket/data/", mode="download")
    assert b.scheme is Scheme.OSS and b.mode is BindingMode.DOWNLOAD
    assert json.dumps({"scheme": b.scheme, "mode": b.mode}) == (
        '{"scheme": "oss", "mode": "download"}'
    )
    assert values.binding("pvc://claim/x/").mode is BindingMode.MOUNT
    assert values.SCHEMES == ("file", "oss", "nas", "pvc")


def test_loaded_components_carry_a_code_source(tmp_path: Path) -> None:
    spec = tmp_path / "component.yaml"
    (tmp_path / "src").mkdir()
    for code, source in (
        ("./src", CodeSource.LOCAL),
        ("oss://bucket/code/", CodeSource.OSS),
        ("{git: 'https://example.com/r.git'}", CodeSource.GIT),
    ):
        spec.write_text(
            "apiVersion: trainstack.dev/v1\nkind: Component\n"
            "metadata: {name: typed, version: 1.0.0}\nspec:\n  jobType: custom\n"
            f"  image: registry.example.com/x:1\n  command: python main.py\n"
            f"  code: {code}\n",
            encoding="utf-8",
        )
        comp = load_component(spec)
        assert comp.code is not None and comp.code.kind is source
