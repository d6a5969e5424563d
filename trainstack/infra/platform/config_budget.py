"""A team's spending budget (`trainstack:teams[].budget`): GPU-hours or an amount of the
environment's currency (`trainstack:costs`) per window, e.g. `{gpuHours: 100, per: 30d}` or
`{amount: 500, per: 30d}`. The platform creates nothing for it: it is read by `plan` and the
budget policy rule (docs/metrics.md, "Budgets")."""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass

from trainstack.infra.configread import Section

GPU_HOURS = "gpuHours"
AMOUNT = "amount"
DEFAULT_WINDOW = "30d"
_UNIT_SECONDS = {"h": 3600, "d": 86400, "w": 7 * 86400}
_WINDOW = r"([1-9]\d{0,4})([hdw])"


@dataclass(frozen=True)
class Budget:
    limit: float
    unit: str  # GPU_HOURS or AMOUNT (in the environment's currency)
    per: str  # the window as written: 30d, 7d, 24h, 4w
    seconds: int  # the window in seconds


def load_budget(team: Section) -> Budget | None:
    if not team.has("budget"):
        return None
    b = team.section("budget")
    given = [k for k in (GPU_HOURS, AMOUNT) if b.has(k)]
    if len(given) == 2:
        raise b.error(
            AMOUNT, f"no {AMOUNT} beside {GPU_HOURS}: a budget is one or the other", b.raw(AMOUNT)
        )
    if not given:
        raise team.error(
            "budget",
            f"{GPU_HOURS} (GPU-hours) or {AMOUNT} (in trainstack:costs' currency) per window, "
            "such as {gpuHours: 100, per: 30d}",
            team.raw("budget"),
        )
    unit = given[0]
    limit = _positive(b, unit)
    per = b.string("per", DEFAULT_WINDOW, pattern=_WINDOW, what="a window such as 30d, 4w or 24h")
    b.finish()
    match = re.fullmatch(_WINDOW, per)
    assert match is not None  # checked by the pattern above
    return Budget(limit, unit, per, int(match[1]) * _UNIT_SECONDS[match[2]])


def _positive(b: Section, key: str) -> float:
    value = b.raw(key)
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):  # `pulumi config set --path` stores text
        with contextlib.suppress(ValueError):
            number = float(value)
    if number is None or not math.isfinite(number) or number <= 0:
        raise b.error(key, "a number above 0", value)
    return number
