"""Manifests as YAML: one multi-document stream, or one file per resource. Byte-stable."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from trainstack.render.yaml11 import needs_quotes

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's when built with it


class _Dumper(_Base):  # type: ignore[misc]
    """Block style; multi-line strings (scripts, JSON files) as literal blocks to stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if needs_quotes(value):  # what kubectl's YAML 1.1 reader would take for a bool or number
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def to_yaml(doc: dict[str, Any]) -> str:
    text: str = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                          allow_unicode=True, width=4096)
    return text


def dump_yaml(docs: Sequence[dict[str, Any]]) -> str:
    """A multi-document stream for `kubectl apply -f -`."""
    return "".join("---\n" + to_yaml(d) for d in docs)


def file_name(index: int, doc: dict[str, Any]) -> str:
    name = doc["metadata"]["name"]
    return f"{index:02d}-{str(doc['kind']).lower()}-{name}.yaml"


def write_directory(docs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """One file per resource, numbered in apply order; stale files of ours are removed."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {file_name(i, d): to_yaml(d) for i, d in enumerate(docs)}
    for old in directory.glob("[0-9][0-9]-*.yaml"):
        if old.name not in wanted:
            old.unlink()
    paths = []
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
