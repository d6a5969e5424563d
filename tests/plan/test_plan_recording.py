"""How `plan` records registrations (trainstack/plan/engine.py): with the inputs the mock
monitor deserialized for the mocks (not deserialized a second time), in the order they arrive,
also when answering one registration runs the event loop and registers another inside it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pulumi.runtime import mocks as pmocks

from trainstack.plan.engine import _Mocks, _RecordingMonitor


def _request(name: str) -> Any:
    return SimpleNamespace(type="kubernetes:core/v1:ConfigMap", name=name, parent="", provider="")


def _answer(mocks: _Mocks, name: str, inputs: dict[str, Any], inner: Any = None) -> Any:
    def answer(request: Any) -> str:
        args = pmocks.MockResourceArgs(request.type, name, inputs, "", "")
        mocks.new_resource(args)
        if inner is not None:  # as the monitor's event loop may, after new_resource
            inner()
        return name

    return answer


def test_a_registration_answered_inside_another_keeps_its_place_and_its_inputs() -> None:
    mocks = _Mocks({}, {})
    monitor = _RecordingMonitor(mocks)

    def inner() -> None:
        inner_answer = _answer(mocks, "b", {"data": {"k": "inner"}})
        assert monitor._recorded("create", _request("b"), inner_answer) == "b"

    outer = _answer(mocks, "a", {"data": {"k": "outer"}}, inner)
    assert monitor._recorded("create", _request("a"), outer) == "a"
    monitor._recorded("read", _request("c"), _answer(mocks, "c", {"name": "c"}))
    assert [(r.op, r.name, r.inputs) for r in monitor.records] == [
        ("create", "a", {"data": {"k": "outer"}}),
        ("create", "b", {"data": {"k": "inner"}}),
        ("read", "c", {"name": "c"}),
    ]


def test_a_registration_the_mocks_never_saw_is_recorded_without_inputs() -> None:
    monitor = _RecordingMonitor(_Mocks({}, {}))
    monitor._recorded("create", _request("x"), lambda request: None)
    assert [(r.name, r.inputs) for r in monitor.records] == [("x", {})]
