"""The sweeps pages: every sweep under the state home with its trial counts and best trial,
and one sweep's trials table, best trial and optimization-history chart
(trainstack.sweep.listing reads each sweep's optuna storage). What a storage holds is read once
per change of it (trainstack.ui.cache): loading a study through optuna costs tens of
milliseconds, and the sweeps page reads every sweep."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from trainstack.errors import UserError
from trainstack.metrics.values import number
from trainstack.sweep.view import params_text
from trainstack.ui.cache import Stamp, StampCache, sqlite_stamp
from trainstack.ui.views import run_href

if TYPE_CHECKING:
    from trainstack.sweep.listing import SweepInfo

# The storage's owner and mode are checked when it is read (trainstack.sweep.study); a change
# of either changes its stamp (its change time), so it is checked again.
_INFOS: StampCache[tuple[Stamp, SweepInfo]] = StampCache(512)


@dataclass(frozen=True)
class SweepLine:
    name: str
    href: str
    objective: str
    trials: str
    best: str
    problem: str


@dataclass(frozen=True)
class TrialLine:
    number: str
    state: str
    value: str
    params: str
    run_id: str
    run_href: str
    reason: str
    best: bool


@dataclass(frozen=True)
class SweepPage:
    title: str
    name: str
    facts: tuple[tuple[str, str], ...]
    trials: tuple[TrialLine, ...]
    history_src: str


def sweep_href(name: str) -> str:
    return "/sweeps/" + quote(name, safe="")


def _kept(home: Path, name: str) -> tuple[Stamp, SweepInfo]:
    """The sweep as trainstack.sweep.listing.info reads it, and the stamp of its storage taken
    before that read: kept while the storage is unchanged."""
    from trainstack.sweep import listing as sweeps
    from trainstack.sweep import study as studies

    if name in ("", ".", "..") or "/" in name:  # no sweep's: its error, and no file stamped
        return (), sweeps.info(home, name)
    current = sqlite_stamp(studies.sweep_dir(home, name) / studies.STORAGE_FILE)
    return _INFOS.get((str(home), name), current, lambda: (current, sweeps.info(home, name)))


def info(home: Path, name: str) -> SweepInfo:
    """trainstack.sweep.listing.info, kept while the sweep's storage is unchanged."""
    return _kept(home, name)[1]


def listing(home: Path) -> tuple[SweepLine, ...]:
    from trainstack.sweep import listing as sweeps

    lines = []
    for name in sweeps.names(home):
        try:
            s = info(home, name)
        except UserError as err:
            lines.append(SweepLine(name, sweep_href(name), "", "", "", err.render()))
            continue
        top = s.best
        lines.append(
            SweepLine(
                name,
                sweep_href(name),
                f"{s.goal.value} {s.objective}",
                str(len(s.trials)),
                f"trial {top.number}: {number(top.value)}" if top else "-",
                "",
            )
        )
    return tuple(lines)


def page(home: Path, name: str) -> SweepPage:
    s = info(home, name)
    top = s.best
    counts: dict[str, int] = {}
    for t in s.trials:
        counts[t.state.value] = counts.get(t.state.value, 0) + 1
    facts = (
        ("objective", f"{s.goal.value} {s.objective}"),
        ("experiment", s.experiment or "-"),
        ("spec", s.spec or "-"),
        ("trials", ", ".join(f"{n} {state}" for state, n in counts.items()) or "none yet"),
        (
            "best",
            f"trial {top.number} ({top.run_id or top.name}): {number(top.value)}; "
            f"{params_text(top.params)}"
            if top
            else "no trial completed with an objective value",
        ),
    )
    return SweepPage(
        title=f"sweep {name}",
        name=name,
        facts=facts,
        trials=tuple(
            TrialLine(
                str(t.number),
                t.state.value,
                number(t.value),
                params_text(t.params),
                t.run_id or "",
                run_href(t.run_id) if t.run_id else "",
                t.reason,
                top is not None and t.number == top.number,
            )
            for t in s.trials
        ),
        history_src=sweep_href(name) + "/history.png" if top else "",
    )


def history_png(home: Path, name: str) -> bytes | None:
    """The sweep's optimization history; None before a trial has a value to draw."""
    from trainstack.sweep.summary import history_png as draw
    from trainstack.ui.charts import drawn

    current, s = _kept(home, name)
    # b"": nothing to draw, kept as such (a PNG is never empty)
    png = drawn(
        ("history", str(home), name),
        current,
        lambda: draw(list(s.trials), s.goal, s.objective) or b"",
    )
    return png or None
