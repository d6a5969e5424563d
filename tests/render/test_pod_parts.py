"""Render builders return what they add instead of writing into one shared, mutable
PodParts: a builder's result depends only on its arguments, and the order parts are
added in is one visible expression in render/context.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainstack.render import RenderOptions
from trainstack.render.code import plan_code
from trainstack.render.parts import Mount, PodParts, combine
from trainstack.render.storage import Storage
from trainstack.spec import load_run

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: parts, version: 1.0.0}
spec:
  jobType: custom
  image: registry.example.com/x:1
  command: python main.py
  inputs: [{name: data}]
  outputs: [{name: out}]
"""

RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {name: parts}
spec:
  component: ./component.yaml
  inputs: {data: {uri: 'pvc://claim/data/', mode: download}}
  outputs: {out: 'pvc://claim/out/'}
"""


def test_pod_parts_are_immutable_and_add_up_in_order() -> None:
    a = PodParts(volumes=({"name": "a"},), mounts=(Mount("a", "/a"),), stage_steps=("one",))
    b = PodParts(volumes=({"name": "b"},), stage_steps=("two",), working_dir="/ml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.working_dir = "/x"  # type: ignore[misc]
    total = combine([a, b])
    assert [v["name"] for v in total.volumes] == ["a", "b"]
    assert total.stage_steps == ("one", "two")
    assert total.effective_working_dir == "/ml"
    assert PodParts().effective_working_dir == "/ml/usercode"
    assert a.volumes == ({"name": "a"},)  # adding left both operands as they were


def test_builders_return_their_parts_and_share_nothing(tmp_path: Path) -> None:
    (tmp_path / "component.yaml").write_text(COMPONENT)
    (tmp_path / "run.yaml").write_text(RUN)
    run = load_run(tmp_path / "run.yaml")
    options = RenderOptions()
    storage = Storage(run, "job", "ns", {}, options)
    first = storage.plan()
    code = plan_code(run, "job", storage, options)
    again = storage.plan()
    assert isinstance(first, PodParts) and isinstance(code, PodParts)
    assert first == again  # planning code in between changed nothing storage returns
    names = [v["name"] for v in first.volumes]
    assert names == ["in-data", "copy-in-data", "out-out"]
    assert len(first.stage_steps) == 1 and first.stage_steps[0].startswith("cp -R -- ")
