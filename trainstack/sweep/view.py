"""The sweep's table of trials (laid out by trainstack.texttable): redrawn in place on a terminal
(rich), one line per change otherwise (logs, pipes, tests); `sweeps show` prints it plain."""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from trainstack import texttable
from trainstack.metrics.values import number
from trainstack.spec.model import ParamValue
from trainstack.texttable import Table, live

if TYPE_CHECKING:
    from trainstack.spec.sweepmodel import Sweep


class TrialState(enum.StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    PRUNED = "pruned"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C: runs again on resume


@dataclass(frozen=True)
class TrialRow:
    number: int
    name: str
    params: dict[str, ParamValue]
    state: TrialState
    value: float | None
    run_id: str | None
    reason: str


def params_text(params: dict[str, ParamValue]) -> str:
    return " ".join(f"{k}={number(v) if isinstance(v, float) else v}" for k, v in params.items())


class View:
    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self._rows: dict[int, TrialRow] = {}
        self._live: Any = None
        self._title = ""

    def start(self, sweep: Sweep, counted: int, resumed: int) -> None:
        self._title = (
            f"sweep {sweep.name}: {sweep.algorithm.value}, {sweep.trial_count} "
            f"trial(s), {sweep.budget.parallel} at a time, objective "
            f"{sweep.objective.goal.value} {sweep.objective.metric} "
            f"({sweep.objective.pick.value})"
        )
        self._line(self._title)
        if counted or resumed:
            self._line(
                f"resuming: {counted} trial(s) already run, {resumed} interrupted "
                "trial(s) to run again"
            )
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self._table(), console=Console(file=self.stream), auto_refresh=False)
            self._live.start()

    def update(self, row: TrialRow) -> None:
        self._rows[row.number] = row
        if self._live is not None:
            self._live.update(self._table(), refresh=True)
            return
        value = "" if row.value is None else f" {number(row.value)}"
        why = f" ({row.reason})" if row.reason and row.state is not TrialState.COMPLETE else ""
        self._line(
            f"trial {row.number} {row.state.value}{value}: {params_text(row.params)}"
            f"{' run ' + row.run_id if row.run_id else ''}{why}"
        )

    def note(self, text: str) -> None:
        self._line(text)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _table(self) -> Any:
        return live(table(list(self._rows.values()), title=self._title))


def table(
    rows: list[TrialRow],
    *,
    title: str = "",
    costs: Mapping[str, tuple[str, str, str]] | None = None,
) -> Table:
    """`costs`: run id -> (resource-time, cost, idle share) (trainstack.metrics.cost.Priced),
    shown as two more columns, cost and idle."""
    columns = ["trial", "state", "objective", "parameters", "run"]
    if costs is not None:
        columns += ["cost", "idle"]
    cells = []
    for r in sorted(rows, key=lambda r: r.number):
        row = [str(r.number), r.state.value, number(r.value), params_text(r.params), r.run_id or ""]
        if costs is not None:
            _, money, idle = costs.get(r.run_id or "", ("-", "-", "-"))
            row += [money, idle]
        cells.append(row)
    return texttable.table(columns, cells, title=title)
