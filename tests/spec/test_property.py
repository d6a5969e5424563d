"""Property: whatever a user writes, the loader returns a valid model or raises a UserError.

Thousands of specs are derived from the valid fixtures by structural mutations (delete keys,
change types, insert unknown keys, random scalars/lists/maps, deep nesting, swapped values) and by
text mutations (bytes inserted, deleted, duplicated). Each is written as a real YAML file next to
the fixture it came from (so its relative references still resolve) and loaded.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spec.mutations import FIXTURES, mutated, values
from tests.spec.specfiles import VALID
from trainstack.errors import UserError, diagnostics_json
from trainstack.kubedl import job_kind
from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, Run


def _profile(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mutants") / "valid"
    shutil.copytree(VALID, root)
    return root


_ORIGINALS: dict[Path, list[tuple[Path, str, Any]]] = {}
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _originals(tree: Path) -> list[tuple[Path, str, Any]]:
    if tree not in _ORIGINALS:
        out = []
        for fixture in FIXTURES:
            path = tree / fixture.relative_to(VALID)
            text = path.read_text()
            out.append((path, text, yaml.safe_load(text)))
        _ORIGINALS[tree] = out
    return _ORIGINALS[tree]


def _dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, allow_unicode=True, sort_keys=False)


def _check_outcome(path: Path) -> None:
    try:
        spec = Loader().load(path)
    except UserError as err:
        diags = err.diagnostics()
        assert diags
        json.loads(diagnostics_json(diags))
        assert err.render()
        for d in diags:
            assert isinstance(d.message, str) and d.message
        return
    _check_model(spec)


def _check_model(spec: Component | Run) -> None:
    """A spec that loads is a valid model: the invariants downstream code relies on hold."""
    comp = spec.component if isinstance(spec, Run) else spec
    names = [c.name for c in (*comp.inputs, *comp.outputs, *comp.parameters)]
    assert len(names) == len(set(names))
    for p in comp.parameters:
        if isinstance(p.default, float):
            assert math.isfinite(p.default)
    if isinstance(spec, Run):
        assert set(spec.parameters) <= {p.name for p in comp.parameters}
        assert set(spec.resources) <= set(job_kind(comp.job_type).role_names) and spec.resources
        for role in spec.resources.values():
            assert isinstance(role.replicas, int) and not isinstance(role.replicas, bool)
            assert role.replicas >= 1 and role.gpu >= 0
        assert 0 <= spec.run_as_user <= 65535
        assert spec.priority is None or 1 <= spec.priority <= 9
        if spec.fault_tolerance:
            assert 1 <= spec.fault_tolerance.max_restarts <= 128
        assert 23456 not in spec.advanced.custom_ports
        assert len(spec.models) <= 10 and len(spec.env) <= 100
        json.dumps(dict(spec.parameters), allow_nan=False)


@pytest.mark.slow
@_profile(1200)
@given(data=st.data())
def test_structurally_mutated_specs_give_a_model_or_user_errors(
    tree: Path, data: st.DataObject
) -> None:
    path, _, original = data.draw(st.sampled_from(_originals(tree)))
    doc = data.draw(mutated(original))
    mutant = path.with_name("mutant.yaml")
    mutant.write_text(_dump(doc))
    _check_outcome(mutant)


@_profile(600)
@given(data=st.data())
def test_text_mutated_specs_give_a_model_or_user_errors(tree: Path, data: st.DataObject) -> None:
    path, text, _ = data.draw(st.sampled_from(_originals(tree)))
    raw = bytearray(text.encode())
    for _ in range(data.draw(st.integers(1, 5))):
        at = data.draw(st.integers(0, len(raw)))
        op = data.draw(st.sampled_from(["insert", "delete", "duplicate"]))
        if op == "insert":
            raw[at:at] = data.draw(
                st.binary(min_size=1, max_size=4)
                | st.sampled_from(
                    [
                        b":",
                        b"-",
                        b" ",
                        b"\n",
                        b"{",
                        b"[",
                        b"&a",
                        b"*a",
                        b"!!",
                        b"'",
                        b'"',
                        b"\t",
                        b"#",
                    ]
                )
            )
        elif op == "delete":
            del raw[at : at + data.draw(st.integers(1, 20))]
        else:
            raw[at:at] = raw[at : at + data.draw(st.integers(1, 40))]
    mutant = path.with_name("mutant.yaml")
    mutant.write_bytes(bytes(raw))
    _check_outcome(mutant)


@_profile(200)
@given(doc=values)
def test_arbitrary_documents_give_user_errors(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    path = tmp_path_factory.getbasetemp() / "arbitrary.yaml"
    for kind in ("Component", "Run"):
        data = {"apiVersion": "trainstack.dev/v1", "kind": kind, "metadata": doc, "spec": doc}
        path.write_text(_dump(data))
        with pytest.raises(UserError):
            Loader().load(path)
