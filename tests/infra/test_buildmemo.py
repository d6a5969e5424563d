"""The infra tests' memo of platform builds (tests/infra/buildmemo.py) answers only for the same
inputs, with what a fresh build registers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra import buildmemo
from tests.infra.conftest import RecordingMocks, mocked


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A memo of this test's own: what other tests kept is not used."""
    mine: dict[str, Any] = {}
    monkeypatch.setattr(buildmemo, "_KEPT", mine)
    return mine


def _registered(recorder: RecordingMocks) -> list[tuple[str, str, Any]]:
    # in the order of their names: registrations arrive in the order their inputs settle
    return sorted(((r.typ, r.name, r.inputs) for r in recorder.resources), key=lambda r: r[:2])


def _build(root: Path, **overrides: str) -> list[tuple[str, str, Any]]:
    with mocked(root) as recorder:
        recorder.use_env("local", **overrides)
        recorder.build()
        return _registered(recorder)


def test_the_same_inputs_are_answered_with_what_a_fresh_build_registers(
    kubedl_root: Path, kept: dict[str, Any]
) -> None:
    first = _build(kubedl_root)
    assert len(kept) == 1
    again = _build(kubedl_root)
    assert len(kept) == 1  # answered, not built again
    kept.clear()
    fresh = _build(kubedl_root)
    assert again == first == fresh


def test_other_config_or_a_replaced_answer_builds_again(
    kubedl_root: Path, kept: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(kubedl_root)
    _build(kubedl_root, **{"kubedl:gangScheduler": "none"})
    assert len(kept) == 2
    with mocked(kubedl_root) as recorder:
        recorder.use_env("local")
        monkeypatch.setattr(recorder, "new_resource", recorder.new_resource)
        assert buildmemo._key(recorder) is None
