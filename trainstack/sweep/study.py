"""optuna's side of a sweep: one SQLite storage per sweep under the state home, the sampler and
pruner the spec names, the search space as optuna distributions, and the bookkeeping that makes
running the same command again resume the sweep.

A trial the sweep had to stop (Ctrl-C, the runner killed) is told FAIL with the user attribute
`interrupted`; on resume its parameters are enqueued again so that exactly the unfinished points
run, and it does not count against the budget. Trials that finished (complete, pruned, failed on
their own) are never rerun.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.errors import UserError
from trainstack.spec.sweepmodel import Algorithm, Choice, Goal, Range, Sweep

if TYPE_CHECKING:
    import optuna

INTERRUPTED = "interrupted"  # user attribute of a trial the sweep stopped
RUN_ID = "run_id"  # user attribute: the registry id of the trial's run
RUN_NAME = "run_name"
REASON = "reason"
FINGERPRINT = "fingerprint"
SPEC = "spec"
STORAGE_FILE = "optuna.db"


def sweeps_root(home: Path) -> Path:
    return home / "sweeps"


def sweep_dir(home: Path, name: str) -> Path:
    return sweeps_root(home) / name


def sweep_logs(home: Path, name: str) -> Path:
    """Where a local sweep writes what each trial's `trainstack run --local` prints, one file a
    trial (the trial's replica logs are in its run directory)."""
    return sweep_dir(home, name) / "logs"


def home_of(directory: Path) -> Path:
    """The state home a sweep's folder is in: `sweep_dir` undone."""
    return directory.parent.parent


def storage_url(directory: Path) -> str:
    return f"sqlite:///{directory / STORAGE_FILE}"


def check_storage(directory: Path) -> bool:
    """Refuse a storage optuna cannot use before optuna touches it: on a damaged file it raises
    from deep inside SQLAlchemy, and into any other SQLite file it would write its own tables.
    Read-only: the file is left as it is. False for a missing or empty file: a sweep not
    started yet."""
    import sqlite3
    from urllib.parse import quote

    from trainstack.regularfile import describe, open_regular

    path = directory / STORAGE_FILE
    _check_trusted(directory)
    try:
        with open_regular(path) as fh:
            empty = not fh.read(1)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise _damaged(path, f"cannot be read: {describe(err)}") from None
    if empty:
        return False
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise _damaged(path, f"not a readable SQLite database ({err})") from None
    if tables and "studies" not in tables:
        raise _damaged(path, "an SQLite database, but not an optuna storage (no studies table)")
    return True


def _check_trusted(directory: Path) -> None:
    """Refuse a storage someone else could have written (`statetrust`): which points a sweep
    runs, which it counts as done and which it calls best rest on it."""
    from trainstack import statetrust

    why = statetrust.path_problem(home_of(directory), directory / STORAGE_FILE)
    if why is None:
        return
    import shlex

    fix = "chmod go-w on it, if it is yours, or " if "writable by" in why else ""
    raise UserError(
        f"{directory / STORAGE_FILE}: the sweep's storage is not used: {why} (only a file of "
        "yours that no one else can write is, in folders of yours alone)",
        hint=f"trainstack leaves it as it is; {fix}move the sweep aside (mv "
        f"{shlex.quote(str(directory))} {shlex.quote(str(directory) + '.bad')})",
    )


def _damaged(path: Path, why: str) -> UserError:
    import shlex

    return UserError(
        f"{path}: the sweep's storage is damaged: {why}",
        hint=f"trainstack leaves it as it is; move the sweep aside (mv "
        f"{shlex.quote(str(path.parent))} {shlex.quote(str(path.parent) + '.bad')}) and run "
        "the sweep again to start it over",
    )


def quiet() -> None:
    """optuna logs every trial at INFO on stderr; the sweep has its own table."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("optuna").propagate = False


@contextlib.contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """One sweep process per sweep: a second `trainstack sweep` of the same sweep is refused
    rather than racing the first for the same grid points."""
    from trainstack import statetrust

    try:
        # 0700 whatever the umask: a folder others can write leaves the storage untrusted.
        statetrust.make_folders(home_of(directory), directory)
        fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise UserError(
            f"cannot create the sweep's folder {directory}: {err.strerror or err}",
            hint="check that the state folder is writable, or point --home elsewhere",
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"sweep {directory.name} is already running (lock {directory / 'lock'})",
                hint="wait for it, or stop it with Ctrl-C",
            ) from None
        yield
    finally:
        os.close(fd)


def distributions(sweep: Sweep) -> dict[str, Any]:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    out: dict[str, Any] = {}
    for name, space in sweep.space.items():
        if isinstance(space, Choice):
            out[name] = CategoricalDistribution(list(space.values))
        elif isinstance(space, Range) and space.integer:
            out[name] = IntDistribution(int(space.min), int(space.max), log=space.log)
        else:
            out[name] = FloatDistribution(space.min, space.max, log=space.log)
    return out


def sampler_for(sweep: Sweep, resumed_at: int = 0) -> optuna.samplers.BaseSampler:
    """The sweep's sampler; `resumed_at`: the trials its study already holds. A sampler rebuilt
    from the same seed would draw its first points again (a resumed random sweep repeated trial
    0 as trial 3): a resumed one is seeded from the seed and that count, so it goes on with
    points of its own, the same ones for the same interruption. (optuna keeps no sampler state
    in its storage; its tutorial "Saving/Resuming Study with RDB Backend" pickles the sampler,
    and unpickling a file in the state home is not something trainstack does.)"""
    import optuna

    seed = sweep.seed
    if seed is not None and resumed_at:
        seed = (seed * 1_000_003 + resumed_at) % 2**32
    if sweep.algorithm is Algorithm.GRID:
        grid = {n: list(s.values) for n, s in sweep.space.items() if isinstance(s, Choice)}
        sampler: optuna.samplers.BaseSampler = _grid_sampler(grid, seed=seed)
    elif sweep.algorithm is Algorithm.RANDOM:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed)
    return sampler


def open_study(sweep: Sweep, directory: Path) -> optuna.Study:
    import optuna

    if not check_storage(directory):
        # Made here 0600 (SQLite would make it as the umask says, perhaps group-writable, and
        # then untrusted); an empty file is an empty database to SQLite.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(directory / STORAGE_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    quiet()
    sampler = sampler_for(sweep)
    pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
    if sweep.early_stopping is not None:
        pruner = optuna.pruners.MedianPruner(
            n_startup_trials=sweep.early_stopping.startup_trials,
            n_warmup_steps=sweep.early_stopping.warmup_steps,
        )
    direction = (
        optuna.study.StudyDirection.MINIMIZE
        if sweep.objective.goal is Goal.MINIMIZE
        else optuna.study.StudyDirection.MAXIMIZE
    )
    study = optuna.create_study(
        storage=storage_url(directory),
        study_name=sweep.name,
        sampler=sampler,
        pruner=pruner,
        direction=direction,
        load_if_exists=True,
    )
    held = len(study.get_trials(deepcopy=False))
    if held:
        study.sampler = sampler_for(sweep, resumed_at=held)
    stored = study.user_attrs.get(FINGERPRINT)
    if stored is None:
        study.set_user_attr(FINGERPRINT, sweep.fingerprint())
        study.set_user_attr(SPEC, str(sweep.source))
        study.set_user_attr("objective", sweep.objective.metric)
        study.set_user_attr("experiment", sweep.experiment)
    elif stored != sweep.fingerprint():
        raise UserError(
            f"sweep {sweep.name} already exists with another search space, objective, "
            f"algorithm or -p values ({directory})",
            hint="give the changed sweep a new metadata.name (or resume it with the -p values "
            "it started with); trials of a different search are not comparable",
        )
    return study


def _grid_sampler_class() -> Any:
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        """optuna's grid sampler minus its `study.stop()` when the grid is exhausted, which
        works only inside `study.optimize`: the sweep loop (ask/tell) stops by its budget."""

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return GridSampler


def _grid_sampler(grid: dict[str, list[Any]], seed: int | None) -> Any:
    return _grid_sampler_class()(grid, seed=seed)


@dataclass(frozen=True)
class Progress:
    counted: int  # trials that count against the budget (finished on their own, or running)
    done: int


def prepare_resume(study: optuna.Study) -> int:
    """Mark trials left running by a runner that died as interrupted, and enqueue the
    parameters of every interrupted point that has not run since. Returns how many were
    enqueued."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    for t in trials:
        if t.state is TrialState.RUNNING:
            study._storage.set_trial_user_attr(t._trial_id, INTERRUPTED, True)
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    trials = study.get_trials(deepcopy=False)
    covered = [t.params for t in trials if not t.user_attrs.get(INTERRUPTED)]
    covered += [
        t.system_attrs.get("fixed_params", {}) for t in trials if t.state is TrialState.WAITING
    ]
    enqueued = 0
    for t in trials:
        if t.user_attrs.get(INTERRUPTED) and t.params not in covered:
            study.enqueue_trial(dict(t.params), skip_if_exists=False)
            covered.append(t.params)
            enqueued += 1
    return enqueued


def progress(study: optuna.Study) -> Progress:
    from optuna.trial import TrialState

    counted = done = 0
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get(INTERRUPTED) or t.state is TrialState.WAITING:
            continue
        counted += 1
        done += t.state.is_finished()
    return Progress(counted, done)
