"""Dividing this machine's GPUs among replicas (pure logic; the device check needs hardware)."""

from __future__ import annotations

import pytest

from trainstack.local.gpus import assign, machine_gpus


def test_gpus_are_handed_out_in_order() -> None:
    plan = assign([("master-0", 1), ("worker-0", 2), ("worker-1", 0)], ("0", "1", "2", "3"))
    assert dict(plan.by_replica) == {"master-0": ("0",), "worker-0": ("1", "2"), "worker-1": ()}
    assert plan.note is None


def test_too_few_gpus_are_shared_and_none_means_cpu_with_a_note() -> None:
    shared = assign([("worker-0", 2), ("worker-1", 2)], ("0", "1", "2"))
    assert dict(shared.by_replica) == {"worker-0": ("0", "1"), "worker-1": ("2", "0")}
    assert shared.note is not None and "share" in shared.note
    none = assign([("worker-0", 1)], ())
    assert dict(none.by_replica) == {"worker-0": ()}
    assert none.note is not None and "has none" in none.note


def test_visible_devices_variables_limit_what_this_machine_offers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "2,3")
    assert machine_gpus() == ("2", "3")
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "none")
    assert machine_gpus() == ()
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert machine_gpus() == ()
