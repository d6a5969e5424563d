"""A local replica's environment carries no variable a pod of the same kind would lack:
PYTHONUNBUFFERED only where KubeDL sets it, no CUDA_VISIBLE_DEVICES without GPUs. Both were set for
every replica at 8f06a63."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainstack.local.jobplan import plan_job
from trainstack.local.sandbox import Layout
from trainstack.spec import load_run

KINDS = Path(__file__).parents[1] / "contract" / "specs" / "kinds"


def _plan(tmp_path: Path, name: str, gpus: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    run = load_run(KINDS / f"{name}.run.yaml")
    return plan_job(
        run, Layout(tmp_path / "run"), run_id="r1", venv=None, grace_seconds=1, available_gpus=gpus
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [("pytorch", "0"), ("xgboost", "0"), ("mpi", None), ("elasticbatch", None), ("custom", None)],
)
def test_pythonunbuffered_only_where_kubedl_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, expected: str | None
) -> None:
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    for launch in _plan(tmp_path, name).launches:
        assert launch.env.get("PYTHONUNBUFFERED") == expected, (launch.role, launch.index)


def test_no_cuda_visible_devices_without_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert all(
        "CUDA_VISIBLE_DEVICES" not in launch.env for launch in _plan(tmp_path, "pytorch").launches
    )


def test_a_replica_without_gpus_on_a_gpu_machine_sees_none(tmp_path: Path) -> None:
    """With GPUs here, a replica that asked for none must not see them (a pod would not)."""
    plan = _plan(tmp_path, "pytorch", gpus=("0", "1"))
    assert all(launch.env["CUDA_VISIBLE_DEVICES"] == "" for launch in plan.launches)
