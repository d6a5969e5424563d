"""A deployed run's pod lifetimes (trainstack.metrics.podtimes), observed by `status` and `wait`
whenever they read its pods, and kept as `pods.json` beside its shipped logs in the artifact
store: the API forgets a pod once it is deleted, and only this user's registry knows the run, so
the store is where a teammate and a later machine read what the run cost.

Each reading merges what it sees into what the store holds (a pod is known by its uid), so a
pod deleted between two readings keeps the time it was last seen, and its end is the scheduling
of the pod that replaced it. Two readers writing at once can lose the other's newest sighting
(the last write wins); the next reading puts back whatever the API still shows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.errors import NotFoundError, ToolMissingError, UserError
from trainstack.metrics import podtimes
from trainstack.metrics.podtimes import PodLife, PodTimes, Stored
from trainstack.metrics.progress import Mark
from trainstack.registry.model import Restart, RunKind, RunRecord, RunStatus

# Why a deployed run's store has nothing to price it by.
NOT_KEPT = f"no {podtimes.FILE} in its store (no `status` or `wait` kept one)"

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry
    from trainstack.deploy.jobstate import JobState


def merge(before: PodTimes | None, now: PodTimes) -> PodTimes:
    """What the store held, updated by `now`'s sightings: pods by uid; a pod gone from the
    listing without an end ends when the pod that replaced it in its replica was scheduled,
    else at the job's end; one neither can say stays as last seen."""
    known = {p.uid: p for p in (before.pods if before else ())}
    for p in now.pods:
        old = known.get(p.uid)
        known[p.uid] = p if old is None else _again(old, p)
    listed = {p.uid for p in now.pods}
    for uid, p in list(known.items()):
        if uid in listed or p.ended is not None:
            continue
        later = [
            q.scheduled
            for q in known.values()
            if (q.role, q.index) == (p.role, p.index) and q.scheduled > p.scheduled
        ]
        if later:
            known[uid] = replace(p, ended=min(later), end=podtimes.REPLACED)
        elif now.ended is not None:
            known[uid] = replace(p, ended=max(now.ended, p.scheduled), end=podtimes.JOB_ENDED)
    created = [t for t in (before.created if before else None, now.created) if t is not None]
    marks = _progressed(before.marks if before else (), now.marks)
    restarts = podtimes.once([*(before.restarts if before else ()), *now.restarts])
    return replace(
        now,
        pods=tuple(sorted(known.values())),
        created=min(created, default=None),
        marks=marks,
        restarts=restarts,
    )


def _again(old: PodLife, new: PodLife) -> PodLife:
    """A pod seen again: its earliest scheduling and start kept (a restart in place hides the
    first start once the kubelet has restarted it twice)."""
    starts = [t for t in (old.running, new.running) if t is not None]
    return replace(
        new, scheduled=min(old.scheduled, new.scheduled), running=min(starts, default=None)
    )


def _progressed(before: Sequence[Mark], seen: Sequence[Mark]) -> tuple[Mark, ...]:
    """The marks kept, with what a reading saw added: the first output once, and a step when
    it differs from the last step kept (as the progress clock writes a line at each change)."""
    kept = list(before)
    for mark in sorted(seen, key=lambda m: m.t):
        if mark.step is None:
            if not any(m.step is None for m in kept):
                kept.append(mark)
            continue
        steps = [m for m in kept if m.step is not None]
        last = max(steps, key=lambda m: m.t) if steps else None
        if last is None or (mark.t > last.t and mark.step != last.step):
            kept.append(mark)
    return tuple(sorted(kept, key=lambda m: (m.t, m.step is not None, m.step or 0.0)))


def sighting(entry: StackEntry, state: JobState) -> PodTimes:
    """The run as `state` shows it now."""
    from trainstack.deploy.recovery import parse_time, restarts

    ended = None
    if state.outcome.finished:
        ends = [parse_time(c.since) for c in state.conditions if c.status == "True"]
        ended = max((e for e in ends if e is not None), default=None)
    return PodTimes(
        run=entry.run,
        env=entry.env,
        stack=entry.stack,
        team=entry.team or entry.namespace,
        component=entry.component,
        experiment=entry.experiment,
        outcome=str(state.outcome.value),
        ended=ended,
        pods=state.lifetimes,
        created=state.created,
        restarts=tuple([*restarts(state), *([state.preempted] if state.preempted else [])]),
    )


@dataclass(frozen=True)
class Place:
    """Where a run's records are kept (its logs place, infra/logplace) and how to reach it."""

    uri: str
    region: str | None
    mount: Path | None

    @classmethod
    def of_entry(cls, entry: StackEntry, mount: Path | None) -> Place | None:
        from trainstack.infra.logplace import LOGS_OUTPUT, REGION_OUTPUT

        uri, region = entry.outputs.get(LOGS_OUTPUT), entry.outputs.get(REGION_OUTPUT)
        return cls(str(uri), str(region) if region else None, mount) if uri else None

    @classmethod
    def of_record(cls, record: RunRecord, mount: Path | None) -> Place | None:
        return cls(record.log_place, record.log_region, mount) if record.log_place else None

    @property
    def reachable(self) -> bool:
        """Whether this machine can reach the store: OSS with credentials in the environment,
        a claim or NAS where it is mounted (`--store`)."""
        from trainstack.deploy import logstore

        if self.uri.startswith("oss://"):
            return logstore.has_credentials()
        return self.mount is not None

    @property
    def out_of_reach(self) -> str:
        """Why the store cannot be read from here, and how to reach it."""
        from trainstack.deploy import logstore

        if self.uri.startswith("oss://"):
            keys = f"${logstore.ACCESS_KEY_ENV}, ${logstore.SECRET_ENV}"
            return f"its OSS store needs credentials here ({keys})"
        return "its claim or NAS store is not mounted here (--store DIR)"

    def read(self) -> PodTimes | None:
        """The run's `pods.json`; None where none was written or the store is out of reach."""
        from trainstack.deploy import logstore

        if not self.reachable:
            return None
        endpoint = logstore.oss_endpoint(self.region)
        text = logstore.read_record(self.uri, podtimes.FILE, mount=self.mount, endpoint=endpoint)
        return None if text is None else podtimes.parse(text, self.uri + podtimes.FILE)

    def progress(self, now: float) -> tuple[Mark, ...]:
        """What the store shows of the run's progress: its replicas' first output (the
        earliest time a shipped log was last written: at or after its first line) and the step
        its metrics reached (when the step chart was last written: when that row was), timed
        by the files' modification times, so by when a pod wrote them, not when they were read.
        Only a claim or NAS mounted here: OSS would mean fetching the metrics (docs/metrics.md)."""
        from trainstack.deploy import logstore
        from trainstack.infra.logplace import run_folder
        from trainstack.infra.run.artifacts import METRICS_DIR
        from trainstack.metrics import progress

        if self.mount is None or self.uri.startswith("oss://"):
            return ()
        marks = []
        logs = logstore.locate_mounted(self.uri, self.mount, create=False)
        try:
            listed = sorted(logs.iterdir()) if logs is not None else []
        except OSError:  # not readable here: no output seen, the reading goes on
            listed = []
        written = [
            t
            for f in listed
            if logstore.is_log_name(f.name) and (t := _written(f, nonempty=True)) is not None
        ]
        if written:
            marks.append(Mark(min(min(written), now), None))
        folder = run_folder(self.uri)
        metrics = folder and logstore.locate_mounted(
            folder + METRICS_DIR + "/", self.mount, create=False
        )
        if metrics:
            chart = progress.step_chart(metrics, root=self.mount)
            step = progress.latest_step(metrics, root=self.mount) if chart else None
            at = _written(chart, nonempty=True) if chart and step is not None else None
            if step is not None and at is not None:
                marks.append(Mark(min(at, now), step))
        return tuple(marks)

    def write(self, times: PodTimes) -> None:
        from trainstack.deploy import logstore

        endpoint = logstore.oss_endpoint(self.region)
        logstore.write_record(
            self.uri, podtimes.FILE, times.to_json(), mount=self.mount, endpoint=endpoint
        )


def keep(
    entry: StackEntry, state: JobState, mount: Path | None, *, progress_only: bool = False
) -> str | None:
    """Merge what `state` shows of the run's pods into its `pods.json` in the store, when this
    machine can reach it; a problem is returned as a warning (status and wait go on).
    `progress_only`: written only when the store shows progress not kept yet (`wait` between
    changes: a mark at each poll, not a write of every pod's last sighting)."""
    place = Place.of_entry(entry, mount)
    if place is None or not place.reachable or not state.lifetimes:
        return None
    try:
        marks = place.progress(time.time())
        if progress_only and not marks:
            return None
        before = place.read()
        seen = replace(sighting(entry, state), marks=marks)
        if not progress_only:  # the launchers' hang restarts in place, which the API never shows
            from trainstack.deploy.recovery import from_store

            launched = from_store(entry, mount) or []
            seen = replace(seen, restarts=podtimes.once([*seen.restarts, *launched]))
        merged = merge(before, seen)
        if progress_only and before is not None and merged.marks == before.marks:
            return None
        if merged != before:
            place.write(merged)
    except UserError as err:
        return f"the run's pod lifetimes were not recorded: {err.message}"
    return None


def lifetimes(
    records: Sequence[RunRecord], mount: Path | None
) -> tuple[dict[str, PodTimes], list[str]]:
    """The pod lifetimes of the deployed runs among `records` whose store this machine reaches
    (by run id), and a problem per record that could not be read (the listing goes on)."""
    found = stored(records, mount)
    return dict(found.found), list(found.problems)


def stored(records: Sequence[RunRecord], mount: Path | None) -> Stored:
    """The deployed runs among `records` with their pod lifetimes read from their stores, and
    why each of the others' could not be."""
    found: dict[str, PodTimes] = {}
    unread: dict[str, str] = {}
    problems: list[str] = []
    for r in records:
        if r.kind is not RunKind.CLUSTER:
            continue
        place = Place.of_record(r, mount)
        if place is None:
            unread[r.id] = "its record names no artifact store"
            continue
        if not place.reachable:
            unread[r.id] = place.out_of_reach
            continue
        try:
            pods = place.read()
        except UserError as err:
            problems.append(f"{r.name}: {err.message}")
            unread[r.id] = f"its {podtimes.FILE} is damaged"
            continue
        if pods is None:
            unread[r.id] = NOT_KEPT
        else:
            found[r.id] = pods
    return Stored(found, unread, tuple(problems))


def _written(path: Path, *, nonempty: bool) -> float | None:
    """A regular file's modification time (not followed through a link); None for anything
    else, or an empty file when `nonempty`."""
    import stat

    try:
        st = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or (nonempty and st.st_size == 0):
        return None
    return st.st_mtime


@dataclass(frozen=True)
class Found:
    """A run as `runs show` and the report see it: its record, recovery history and, for a
    deployed run, its pod lifetimes."""

    record: RunRecord
    history: list[Restart]
    pods: PodTimes | None


def find(ref: str, *, home: Path | None, mount: Path | None) -> Found:
    """The run `ref`: this registry's record, else a run deployed in the backend (a teammate's)
    whose pod lifetimes are in the store, shown from them."""
    from trainstack.registry import Registry, state_home

    with Registry.open(state_home(home)) as reg:
        reg.mark_interrupted()
        try:
            record = reg.resolve(ref)
        except NotFoundError as missing:
            unknown = missing
        else:
            history = reg.restarts(record.id)
            place = Place.of_record(record, mount) if record.kind is RunKind.CLUSTER else None
            return Found(record, history, place.read() if place else None)
    return _deployed(ref, home, mount, unknown)


def _deployed(ref: str, home: Path | None, mount: Path | None, unknown: NotFoundError) -> Found:
    from trainstack.deploy.lookup import locate
    from trainstack.deploy.recovery import from_store

    try:
        found = locate(ref, home=home)
    except (NotFoundError, ToolMissingError):
        raise unknown from None
    place = Place.of_entry(found.entry, mount)
    pods = place.read() if place else None
    if place is None or pods is None:
        raise NotFoundError(
            f"{ref}: not in this registry; it is deployed ({found.entry.stack}), but "
            + ("its stack names no artifact store" if place is None else f"{place.uri} holds ")
            + ("" if place is None else f"no {podtimes.FILE}"),
            hint="`trainstack status RUN` records its pods' lifetimes there while they run "
            "(with --store DIR for a claim or NAS store); `trainstack status` shows it now",
        )
    record = record_of(pods, found.entry.version, place)
    history = podtimes.once([*(from_store(found.entry, mount) or []), *pods.restarts])
    return Found(record, list(history), pods)


def record_of(pods: PodTimes, version: str, place: Place) -> RunRecord:
    """A registry-shaped record of a deployed run this registry never held, from its
    `pods.json`: identified by its stack."""
    started = pods.started
    return RunRecord(
        id=pods.stack,
        name=pods.run,
        component=pods.component,
        component_version=version,
        kind=RunKind.CLUSTER,
        job_type="",
        experiment=pods.experiment,
        tags={},
        status=RunStatus(pods.outcome),
        created_at=started if started is not None else time.time(),
        started_at=started,
        finished_at=pods.finished,
        exits=(),
        restarts=0,
        run_dir=None,
        runner_pid=None,
        runner_started_at=None,
        stack_name=pods.stack,
        spec_path=None,
        reason=None,
        log_place=place.uri,
        log_region=place.region,
    )
