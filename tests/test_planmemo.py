"""The tests' memo of the platform's plan (tests/planmemo.py) answers only for the same inputs,
with what a fresh plan gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.infra.conftest import REPO
from tests.planmemo import memoized
from trainstack.plan import service
from trainstack.plan.engine import Plan

_REAL = service.plan_platform  # as imported, before any test's memo is set in its place


def _copy(to: Path) -> Path:
    to.mkdir(parents=True)
    for name in ("Pulumi.yaml", "Pulumi.local.yaml"):
        shutil.copy(REPO / name, to / name)
    shutil.copytree(REPO / "platform", to / "platform")
    return to


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], object]:
    monkeypatch.delenv("TRAINSTACK_PLAN_CACHE", raising=False)
    made: list[str] = []

    def real(env: str, start: Path | None = None) -> Plan:
        made.append(env)
        return _REAL(env, start)

    # a memo and a "test folder" of this test's own: what other tests kept is not used
    return made, memoized(real, tmp_path / "tests", {})


def _json(plan: Plan) -> object:
    return [[r.to_json() for r in plan.resources], plan.outputs, plan.pending]


def test_another_copy_of_the_same_project_is_answered_with_a_fresh_plans_result(
    tmp_path: Path, counted: tuple[list[str], object]
) -> None:
    made, plan_platform = counted
    first = plan_platform("local", _copy(tmp_path / "tests" / "a"))  # type: ignore[operator]
    again = plan_platform("local", _copy(tmp_path / "tests" / "b"))  # type: ignore[operator]
    assert made == ["local"]
    assert _json(again) == _json(first) == _json(_REAL("local", tmp_path / "tests" / "b"))
    again.resources.clear()  # an answer is a copy of its own
    assert plan_platform("local", tmp_path / "tests" / "a").resources  # type: ignore[operator]


def test_an_edited_input_is_planned_again(
    tmp_path: Path, counted: tuple[list[str], object]
) -> None:
    made, plan_platform = counted
    root = _copy(tmp_path / "tests" / "a")
    plan_platform("local", root)  # type: ignore[operator]
    env_file = root / "Pulumi.local.yaml"
    env_file.write_text(env_file.read_text() + "\n# edited\n")
    plan_platform("local", root)  # type: ignore[operator]
    assert made == ["local", "local"]


def test_a_plan_that_names_a_folder_of_its_test_is_told_apart(tmp_path: Path) -> None:
    from tests.planmemo import _names_a_folder
    from trainstack.plan.engine import PlannedResource

    def plan(value: str) -> Plan:
        made = Plan(project="trainstack", stack="local")
        made.resources.append(
            PlannedResource(
                "create",
                "kubernetes:core/v1:ConfigMap",
                "c",
                None,
                None,
                True,
                {"data": {"path": value}},
            )
        )
        return made

    folders = [str(tmp_path / "project"), str(tmp_path)]
    assert _names_a_folder(plan(f"{tmp_path}/project/kubeconfig"), folders)
    assert not _names_a_folder(plan("/etc/kubernetes/admin.conf"), folders)
