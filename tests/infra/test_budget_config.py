"""`trainstack:teams[].budget`: what a team may spend per window, in GPU-hours or in the
environment's currency, checked with the rest of the platform's config: one clear error per bad
value, naming the key. Before this a budget was an unknown key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.test_config import READY, ROOT, error_of, load_with, shipped
from trainstack.infra.platform.config_budget import AMOUNT, GPU_HOURS, Budget


@pytest.fixture(autouse=True)
def _set_up(kubedl_root: Path, ready: dict[str, dict[str, str]]) -> None:
    ROOT["root"] = kubedl_root  # as tests/infra/test_config.py: the shipped env, set up
    READY.update(ready)


def _teams(budget: object) -> list[dict[str, Any]]:
    values, _ = shipped("local")
    teams = json.loads(values["trainstack:teams"])
    teams[0]["budget"] = budget
    return teams


def test_a_budget_in_gpu_hours_or_money_per_window_loads() -> None:
    cfg = load_with("local", trainstack__teams=_teams({"gpuHours": 100, "per": "30d"}))
    assert cfg.teams[0].budget == Budget(100.0, GPU_HOURS, "30d", 30 * 86400)
    assert cfg.teams[1].budget is None  # a team without one has no limit
    priced = load_with(
        "local",
        trainstack__teams=_teams({"amount": "500", "per": "4w"}),
        trainstack__costs={"currency": "CNY", "gpuHour": 8},
    )
    assert priced.teams[0].budget == Budget(500.0, AMOUNT, "4w", 28 * 86400)
    # the window defaults to 30 days
    cfg = load_with("local", trainstack__teams=_teams({"gpuHours": 2.5}))
    assert cfg.teams[0].budget is not None and cfg.teams[0].budget.per == "30d"


@pytest.mark.parametrize(
    ("budget", "needle"),
    [
        (100, "trainstack:teams[0].budget: expected an object, but it is 100"),
        ({"per": "30d"}, "trainstack:teams[0].budget: expected gpuHours (GPU-hours) or amount"),
        ({"gpuHours": 0}, "trainstack:teams[0].budget.gpuHours: expected a number above 0"),
        ({"gpuHours": -5}, "budget.gpuHours: expected a number above 0, but it is -5"),
        ({"gpuHours": True}, "budget.gpuHours: expected a number above 0, but it is true"),
        ({"gpuHours": "lots"}, "budget.gpuHours: expected a number above 0, but it is 'lots'"),
        ({"gpuHours": 1, "amount": 2}, "budget.amount: expected no amount beside gpuHours"),
        ({"gpuHours": 1, "per": "month"}, "budget.per: expected a window such as 30d, 4w or 24h"),
        ({"gpuHours": 1, "per": "0d"}, "budget.per: expected a window such as 30d"),
        ({"gpuHours": 1, "pre": "30d"}, "trainstack:teams[0].budget.pre: unknown key"),
        (
            {"amount": 500},
            "trainstack:teams[0].budget.amount: a budget in money needs trainstack:costs",
        ),
    ],
)
def test_a_bad_budget_is_one_clear_error(budget: object, needle: str) -> None:
    err = error_of("local", trainstack__teams=_teams(budget))
    assert needle in err.message, err.message
    assert "Traceback" not in err.render()
