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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.deploy.apijson import Reader
from trainstack.errors import NotFoundError, ToolMissingError, UserError
from trainstack.metrics import podtimes
from trainstack.metrics.podtimes import PodLife, PodTimes
from trainstack.metrics.progress import Mark
from trainstack.registry.model import Restart, RunKind, RunRecord, RunStatus

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry
    from trainstack.deploy.jobstate import JobState, ReplicaState

_GIB = float(1 << 30)
_ENDED = ("Succeeded", "Failed")  # pod phases after which it holds nothing


def observe(
    pods: Sequence[Any], replicas: Sequence[ReplicaState], now: float
) -> tuple[PodLife, ...]:
    """Each scheduled pod's lifetime as the API shows it now (a pod not yet bound to a node
    holds nothing and costs nothing). `replicas`: the same pods' roles and indexes."""
    where = {r.pod: (r.role, r.index) for r in replicas}
    read = Reader("pods")
    out = []
    for i, raw in enumerate(pods):
        at = f"items[{i}]"
        pod = read.obj(raw, at)
        meta = read.obj(pod.get("metadata"), f"{at}.metadata")
        name = str(read.text(meta.get("name"), f"{at}.metadata.name") or "")
        status = read.obj(pod.get("status"), f"{at}.status")
        scheduled = _scheduled(read, status, at)
        if name not in where or scheduled is None:
            continue
        spec = read.obj(pod.get("spec"), f"{at}.spec")
        cpu, memory, gpu = _requests(read, spec, at)
        ended = _ended(read, status, at)
        role, index = where[name]
        out.append(
            PodLife(
                role=role,
                index=index,
                scheduled=scheduled,
                pod=name,
                uid=str(read.text(meta.get("uid"), f"{at}.metadata.uid") or name),
                seen=now if ended is None else ended,  # an ended pod reads the same each time
                ended=ended,
                end=podtimes.TERMINATED if ended is not None else None,
                cpu=cpu,
                memory_gib=memory,
                gpu=gpu,
                running=_running(read, status, at),
                hang_timeout=_hang_timeout(read, spec, at),
            )
        )
    return tuple(sorted(out))


def _running(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """When every container of the pod had started: per container its earliest start the API
    still shows (the current run's, or the previous run's where it restarted in place; the
    kubelet keeps only the last), the latest of those. None while one has not started."""
    from trainstack.deploy.recovery import parse_time

    firsts = []
    listed = read.items(status.get("containerStatuses"), f"{at}.status.containerStatuses")
    for j, raw in enumerate(listed):
        here = f"{at}.status.containerStatuses[{j}]"
        container = read.obj(raw, here)
        starts = []
        for key, states in (("state", ("running", "terminated")), ("lastState", ("terminated",))):
            held = read.obj(container.get(key), f"{here}.{key}")
            for name in states:
                one = read.obj(held.get(name), f"{here}.{key}.{name}")
                since = parse_time(read.text(one.get("startedAt"), f"{here}.{key}.{name}"))
                if since is not None:
                    starts.append(since)
        if not starts:
            return None
        firsts.append(min(starts))
    return max(firsts, default=None)


def _hang_timeout(read: Reader, spec: Mapping[str, Any], at: str) -> float:
    """The hang timeout the pod's launcher was given (trainstack.contract.shell writes it into
    the container's command), 0 where it has none."""
    from trainstack.contract.shell import HANG_TIMEOUT_OPTION

    prefix = HANG_TIMEOUT_OPTION + "="
    for j, c in enumerate(read.items(spec.get("containers"), f"{at}.spec.containers")):
        container = read.obj(c, f"{at}.spec.containers[{j}]")
        for key in ("command", "args"):
            for arg in read.items(container.get(key), f"{at}.spec.containers[{j}].{key}"):
                if isinstance(arg, str) and arg.startswith(prefix):
                    try:
                        return max(0.0, float(arg[len(prefix) :]))
                    except ValueError:
                        continue
    return 0.0


def _scheduled(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """When the scheduler bound the pod (its PodScheduled condition turning True)."""
    from trainstack.deploy.recovery import parse_time

    for j, c in enumerate(read.items(status.get("conditions"), f"{at}.status.conditions")):
        cond = read.obj(c, f"{at}.status.conditions[{j}]")
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            since = read.text(
                cond.get("lastTransitionTime"), f"{at}.status.conditions[{j}].lastTransitionTime"
            )
            return parse_time(since)
    return None


def _ended(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """A finished pod's end: the last of its containers' `finishedAt`."""
    from trainstack.deploy.recovery import parse_time

    if status.get("phase") not in _ENDED:
        return None
    ends = []
    listed = read.items(status.get("containerStatuses"), f"{at}.status.containerStatuses")
    for j, s in enumerate(listed):
        here = f"{at}.status.containerStatuses[{j}].state"
        state = read.obj(read.obj(s, here).get("state"), here)
        done = read.obj(state.get("terminated"), f"{here}.terminated")
        end = parse_time(read.text(done.get("finishedAt"), f"{here}.terminated.finishedAt"))
        if end is not None:
            ends.append(end)
    return max(ends, default=None)


def _requests(read: Reader, spec: Mapping[str, Any], at: str) -> tuple[float, float, float]:
    """(vCPUs, GiB, GPUs) its containers request, summed (as the scheduler sums them)."""
    from trainstack.platformnames import GPU_RESOURCE
    from trainstack.spec.values import quantity

    total = [0.0, 0.0, 0.0]
    for j, c in enumerate(read.items(spec.get("containers"), f"{at}.spec.containers")):
        here = f"{at}.spec.containers[{j}].resources"
        res = read.obj(read.obj(c, f"{at}.spec.containers[{j}]").get("resources"), here)
        asked = read.obj(res.get("requests"), f"{here}.requests")
        for slot, (key, scale) in enumerate((("cpu", 1.0), ("memory", _GIB), (GPU_RESOURCE, 1.0))):
            value = asked.get(key)
            if value is None:
                continue
            try:
                total[slot] += quantity(value).value / scale
            except ValueError as err:
                raise read.error(f"{here}.requests.{key}", str(err)) from None
    return total[0], total[1], total[2]


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
        written = [
            t
            for f in (sorted(logs.iterdir()) if logs is not None else ())
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


def keep(entry: StackEntry, state: JobState, mount: Path | None) -> str | None:
    """Merge what `state` shows of the run's pods into its `pods.json` in the store, when this
    machine can reach it; a problem is returned as a warning (status and wait go on)."""
    place = Place.of_entry(entry, mount)
    if place is None or not place.reachable or not state.lifetimes:
        return None
    try:
        before = place.read()
        seen = sighting(entry, state)
        merged = merge(before, replace(seen, marks=place.progress(time.time())))
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
    found: dict[str, PodTimes] = {}
    problems: list[str] = []
    for r in records:
        place = Place.of_record(r, mount) if r.kind is RunKind.CLUSTER else None
        if place is None:
            continue
        try:
            pods = place.read()
        except UserError as err:
            problems.append(f"{r.name}: {err.message}")
            continue
        if pods is not None:
            found[r.id] = pods
    return found, problems


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
