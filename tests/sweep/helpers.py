"""A copy of the hold component with a base run and a sweep, written per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "hold"


def hold_project(
    tmp: Path,
    sweep_spec: dict[str, object],
    *,
    name: str = "hold-sweep",
    base_params: dict[str, object] | None = None,
) -> Path:
    """tmp/hold/{component.yaml,src,runs/base.yaml,sweeps/<name>.yaml}; returns the sweep file."""
    root = tmp / "hold"
    (tmp / "blocks").mkdir()
    shutil.copytree(FIXTURE, root)
    (root / "runs").mkdir()
    (root / "sweeps").mkdir()
    base = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": "hold-base"},
        "spec": {
            "component": "../component.yaml",
            "parameters": base_params or {},
            "env": {"BLOCKS": str(tmp / "blocks")},
        },
    }
    (root / "runs" / "base.yaml").write_text(yaml.safe_dump(base))
    doc = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Sweep",
        "metadata": {"name": name},
        "spec": {"run": "../runs/base.yaml", **sweep_spec},
    }
    path = root / "sweeps" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
