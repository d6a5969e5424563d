"""Build small component/run specs as real YAML files and collect what the loader says."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from trainstack.errors import SpecError
from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, Run

COMPONENT: dict[str, Any] = {
    "apiVersion": "trainstack.dev/v1",
    "kind": "Component",
    "metadata": {"name": "rules", "version": "1.0.0"},
    "spec": {
        "jobType": "pytorch",
        "image": "acme/torch:2.3",
        "command": "python main.py $PAI_USER_ARGS",
        "inputs": [{"name": "train"}],
        "outputs": [{"name": "model"}],
        "parameters": [
            {"name": "epochs", "type": "Int", "default": 10, "range": {"min": 1, "max": 100}},
            {"name": "lr", "type": "Float", "default": 0.1, "range": {"min": 0.0, "max": 1.0}},
            {"name": "optimizer", "type": "String", "default": "adam", "enum": ["adam", "sgd"]},
            {"name": "tag", "type": "String", "range": {"min": 2, "max": 8}},
            {"name": "batch", "type": "Int", "enum": [32, 64]},
            {"name": "ratio", "type": "Float", "enum": [0.5, 1.5]},
            {"name": "amp", "type": "Bool", "default": False},
        ],
        "constraints": {"machineType": ["cpu", "gpu"], "multiNode": True, "multiGpu": True},
    },
}

RUN: dict[str, Any] = {
    "apiVersion": "trainstack.dev/v1",
    "kind": "Run",
    "metadata": {"name": "rules-run"},
    "spec": {"component": "./component.yaml"},
}

DELETE = object()


def merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of base with patch merged in; DELETE removes a key."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def component(patch: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return merged(COMPONENT, {**(patch or {}), **({"spec": spec} if spec else {})})


def run(patch: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return merged(RUN, {**(patch or {}), **({"spec": spec} if spec else {})})


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


class Kit:
    """Writes specs into a temporary directory and loads them like `trainstack validate`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def component(self, data: dict[str, Any]) -> Component | list[tuple[str, str]]:
        path = write_yaml(self.root / "component.yaml", data)
        try:
            result = Loader().component(path)
        except SpecError as err:
            return [(d.path, d.message) for d in err.diagnostics()]
        return result

    def run(
        self, data: dict[str, Any], comp: dict[str, Any] | None = None
    ) -> Run | list[tuple[str, str]]:
        write_yaml(self.root / "component.yaml", comp or COMPONENT)
        path = write_yaml(self.root / "run.yaml", data)
        try:
            result = Loader().run(path)
        except SpecError as err:
            return [(d.path, d.message) for d in err.diagnostics()]
        return result

    def component_errors(self, data: dict[str, Any]) -> list[tuple[str, str]]:
        result = self.component(data)
        assert isinstance(result, list), f"expected diagnostics, loaded {result!r}"
        return result

    def run_errors(
        self, data: dict[str, Any], comp: dict[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        result = self.run(data, comp)
        assert isinstance(result, list), f"expected diagnostics, loaded {result!r}"
        return result

    def ok_component(self, data: dict[str, Any]) -> Component:
        result = self.component(data)
        assert isinstance(result, Component), result
        return result

    def ok_run(self, data: dict[str, Any], comp: dict[str, Any] | None = None) -> Run:
        result = self.run(data, comp)
        assert isinstance(result, Run), result
        return result
