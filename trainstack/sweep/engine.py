"""The sweep loop, the same for local trials and run stacks: ask optuna for a trial, start it
through a `Launcher`, keep at most `parallel` going, read each running trial's objective series
for the pruner, tell optuna how each ended. Ctrl-C (or SIGTERM) stops every running trial, waits
for each to end, records them as interrupted and re-raises KeyboardInterrupt; the next run of the
same command resumes (sweep/study.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from trainstack.errors import UserError
from trainstack.metrics.values import number as shown_number
from trainstack.spec.sweepmodel import Sweep
from trainstack.stopsignals import stop_on_signals
from trainstack.sweep import study as studies
from trainstack.sweep.objective import Missing, Series, read_series
from trainstack.sweep.trialspec import trial_name, write_trial
from trainstack.sweep.view import TrialRow, TrialState, View

if TYPE_CHECKING:
    import optuna


class Handle(Protocol):
    """One started trial."""

    def poll(self) -> bool:
        """Whether the trial's run has ended."""

    def succeeded(self) -> bool:
        """After poll() said it ended: whether the run succeeded."""

    def reason(self) -> str: ...

    def run_id(self) -> str | None:
        """The registry id of the trial's run, once it has one."""

    def metrics(self) -> Path | None:
        """The run's `$METRICS` as a local directory, once it can be read."""

    def stop(self) -> None:
        """Ask the run to stop (it is then recorded as cancelled)."""

    def wait(self, timeout: float) -> None: ...


class Launcher(Protocol):
    def start(self, spec: Path, name: str) -> Handle: ...


@dataclass
class _Active:
    trial: optuna.trial.Trial
    handle: Handle
    name: str
    reported: set[int] = field(default_factory=set)
    pruned: bool = False
    last: float | None = None
    metrics_stamp: float = -1.0


@dataclass(frozen=True)
class SweepResult:
    directory: Path
    rows: tuple[TrialRow, ...]


def run_sweep(
    sweep: Sweep,
    home: Path,
    launcher: Launcher,
    view: View,
    *,
    parallel: int | None = None,
    poll_seconds: float = 0.05,
    stop_grace: float = 60.0,
) -> SweepResult:
    directory = studies.sweep_dir(home, sweep.name)
    with studies.exclusive(directory):
        study = studies.open_study(sweep, directory)
        resumed = studies.prepare_resume(study)
        counted = studies.progress(study).counted
        view.start(sweep, counted, resumed)
        loop = _Loop(
            sweep, study, launcher, view, directory, parallel or sweep.budget.parallel, poll_seconds
        )
        with stop_on_signals(loop.request_stop):
            try:
                loop.run(counted)
            finally:
                loop.stop_all(stop_grace)
                view.stop()
        if loop.wrong_objective is not None:
            raise loop.wrong_objective
        if loop.stop_requested:
            view.note(
                f"sweep {sweep.name} stopped: {loop.interrupted} running trial(s) "
                "stopped; run the same command again to resume"
            )
            raise KeyboardInterrupt
        return SweepResult(directory, tuple(rows(study)))


class _Loop:
    def __init__(
        self,
        sweep: Sweep,
        study: optuna.Study,
        launcher: Launcher,
        view: View,
        directory: Path,
        parallel: int,
        poll_seconds: float,
    ) -> None:
        self.sweep, self.study, self.launcher, self.view = sweep, study, launcher, view
        self.directory, self.parallel, self.poll = directory, parallel, poll_seconds
        self.active: dict[int, _Active] = {}
        self.stop_requested = False
        self.interrupted = 0
        # The objective names a metric the first finished trial did not write: every trial
        # would burn its budget for nothing, so the sweep stops and says so.
        self.wrong_objective: UserError | None = None
        self.distributions = studies.distributions(sweep)

    def request_stop(self) -> None:
        if self.stop_requested:  # a second Ctrl-C: the trials' runners stop without grace
            for a in self.active.values():
                a.handle.stop()
        self.stop_requested = True

    def run(self, counted: int) -> None:
        limit = self.sweep.budget.timeout_seconds
        deadline = None if limit is None else time.monotonic() + limit
        while not self.stop_requested:
            while (
                len(self.active) < self.parallel
                and counted < self.sweep.trial_count
                and (deadline is None or time.monotonic() < deadline)
                and not self.stop_requested
            ):
                self._start()
                counted += 1
            if not self.active:
                return
            for number in list(self.active):
                self._check(number)
            time.sleep(self.poll)

    def _start(self) -> None:
        trial = self.study.ask(self.distributions)
        name = trial_name(self.sweep, trial.number)
        spec = write_trial(self.sweep, self.directory, trial.number, dict(trial.params))
        trial.set_user_attr(studies.RUN_NAME, name)
        handle = self.launcher.start(spec, name)
        self.active[trial.number] = _Active(trial, handle, name)
        self.view.update(
            TrialRow(trial.number, name, dict(trial.params), TrialState.RUNNING, None, None, "")
        )

    def _check(self, number: int) -> None:
        a = self.active[number]
        ended = a.handle.poll()
        if self.sweep.early_stopping is not None and not a.pruned:
            self._intermediate(a)
        if not ended:
            return
        del self.active[number]
        run_id = a.handle.run_id()
        if run_id is not None:
            a.trial.set_user_attr(studies.RUN_ID, run_id)
        if a.pruned:
            self._tell(a, TrialState.PRUNED, a.last, "pruned: below the median of earlier trials")
            return
        if not a.handle.succeeded():
            self._tell(a, TrialState.FAILED, None, a.handle.reason())
            return
        where = a.handle.metrics()
        found = read_series(where, self.sweep.objective) if where is not None else Missing(())
        if isinstance(found, Series) and found.diverged is not None:
            step, value = found.diverged
            self._tell(
                a,
                TrialState.FAILED,
                None,
                f"{self.sweep.objective.metric} is {shown_number(value)} at step {step}: "
                "a trial whose objective is not a finite number has no score",
            )
        elif isinstance(found, Series) and found.value is not None:
            self._tell(a, TrialState.COMPLETE, found.value, "")
        else:
            known = found.known if isinstance(found, Missing) else ()
            unread = found.unread if isinstance(found, Missing) else ()
            self._tell(
                a,
                TrialState.FAILED,
                None,
                f"the run has no values for {self.sweep.objective.metric!r} "
                + (f"({unread[0]})" if unread else f"(its metrics: {', '.join(known) or 'none'})"),
            )
            if isinstance(found, Missing) and not self._any_scored():
                self._stop_for_objective(a, found)

    def _any_scored(self) -> bool:
        from optuna.trial import TrialState as OptunaState

        return any(t.state is OptunaState.COMPLETE for t in self.study.get_trials(deepcopy=False))

    def _stop_for_objective(self, a: _Active, found: Missing) -> None:
        from trainstack.suggest import hint

        metric, known = self.sweep.objective.metric, found.known
        trial = f"sweep {self.sweep.name}: trial {a.trial.number} ({a.name})"
        if found.unread:  # the metric is named right; its values are what is wrong
            self.wrong_objective = UserError(
                f"{trial} succeeded, but its objective metric {metric!r} could not be read: "
                + "; ".join(found.unread[:3]),
                hint="every value in a metrics CSV must be a number (an empty cell is a gap: "
                "docs/metrics.md); fix what the run writes there, then run the same command again",
            )
        else:
            self.wrong_objective = UserError(
                f"{trial} succeeded without writing the objective metric {metric!r}; it wrote: "
                f"{', '.join(known) or 'none'}",
                hint=(hint(metric, known) or "") + " set spec.objective.metric to one of the "
                "metrics the run writes (metrics.json's chart/series ids: docs/metrics.md), then "
                "run the same command again",
            )
        self.stop_requested = True
        for other in self.active.values():
            other.handle.stop()

    def _intermediate(self, a: _Active) -> None:
        where = a.handle.metrics()
        if where is None:
            return
        # Only reread when the series changed: runs rewrite the CSV as they train.
        stamp = max((p.stat().st_mtime for p in where.glob("*.csv")), default=-1.0)
        if stamp <= a.metrics_stamp:
            return
        a.metrics_stamp = stamp
        found = read_series(where, self.sweep.objective)
        if not isinstance(found, Series):
            return
        for step, value in found.steps:
            if not math.isfinite(value):
                break  # diverged: the trial fails when it ends (_check), nothing to compare
            if step not in a.reported:
                a.trial.report(value, step)
                a.reported.add(step)
                a.last = value
        if a.reported and a.trial.should_prune():
            a.pruned = True
            a.handle.stop()

    def _tell(self, a: _Active, state: TrialState, value: float | None, reason: str) -> None:
        from optuna.trial import TrialState as OptunaState

        if reason:
            a.trial.set_user_attr(studies.REASON, reason)
        if state is TrialState.COMPLETE:
            self.study.tell(a.trial, value)
        elif state is TrialState.PRUNED:
            self.study.tell(a.trial, state=OptunaState.PRUNED)
        else:
            self.study.tell(a.trial, state=OptunaState.FAIL)
        self.view.update(
            TrialRow(
                a.trial.number,
                a.name,
                dict(a.trial.params),
                state,
                value,
                a.handle.run_id(),
                reason,
            )
        )

    def stop_all(self, grace: float) -> None:
        """Stop every running trial and wait for each to end: nothing is left behind."""
        from optuna.trial import TrialState as OptunaState

        for a in self.active.values():
            a.handle.stop()
        for a in self.active.values():
            a.handle.wait(grace)
            self.interrupted += 1
            run_id = a.handle.run_id()
            if run_id is not None:
                a.trial.set_user_attr(studies.RUN_ID, run_id)
            a.trial.set_user_attr(studies.INTERRUPTED, True)
            self.study.tell(a.trial, state=OptunaState.FAIL)
            self.view.update(
                TrialRow(
                    a.trial.number,
                    a.name,
                    dict(a.trial.params),
                    TrialState.INTERRUPTED,
                    None,
                    run_id,
                    "stopped",
                )
            )
        self.active.clear()


def rows(study: optuna.Study) -> list[TrialRow]:
    from optuna.trial import TrialState as OptunaState

    out = []
    for t in study.get_trials(deepcopy=False):
        if t.state is OptunaState.WAITING:
            continue
        if t.user_attrs.get(studies.INTERRUPTED):
            state = TrialState.INTERRUPTED
        else:
            state = {
                OptunaState.COMPLETE: TrialState.COMPLETE,
                OptunaState.PRUNED: TrialState.PRUNED,
                OptunaState.RUNNING: TrialState.RUNNING,
            }.get(t.state, TrialState.FAILED)
        out.append(
            TrialRow(
                t.number,
                str(t.user_attrs.get(studies.RUN_NAME, "")),
                dict(t.params),
                state,
                t.value if t.values else None,
                t.user_attrs.get(studies.RUN_ID),
                str(t.user_attrs.get(studies.REASON, "")),
            )
        )
    return out
