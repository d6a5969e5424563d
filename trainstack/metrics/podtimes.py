"""A deployed run's pod lifetimes: what its resource-time and cost are computed from, kept as
`pods.json` beside its shipped logs in the artifact store (trainstack.infra.logplace), where a
teammate and a later machine read it (trainstack.deploy.podrecords writes it).

Each pod is counted from when the scheduler bound it to a node (its PodScheduled condition) to
when it ended: its containers' last `finishedAt` once the pod is Succeeded or Failed; for a pod
that vanished (deleted, preempted, evicted) the scheduling of the pod that replaced it in the
same replica, else the job's end; for one still running, the last time it was seen. A restart
in place keeps its pod, so its time is inside the pod's; a recreated pod is a pod of its own.
What it costs is its requests (every container's `resources.requests`) × that time.

For the goodput ledger (trainstack.metrics.podledger) it also keeps when the job was created,
when each pod's containers had all started, the hang timeout its launcher was given, and the
progress its readers saw in the store: the first output in a replica's log and each step of the
metrics, each with the time the store says the file was written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainstack.errors import UserError
from trainstack.metrics.progress import Mark
from trainstack.registry.model import Restart

FILE = "pods.json"
VERSION = 1
# How a pod's end is known: the text `runs show` and the docs use.
TERMINATED = "terminated"  # its containers' finishedAt
REPLACED = "replaced"  # the replica's next pod was scheduled
JOB_ENDED = "job ended"  # gone by the job's end
OUTCOMES = ("pending", "running", "succeeded", "failed")  # a deployed job's, as status says


@dataclass(frozen=True, order=True)
class PodLife:
    role: str
    index: int
    scheduled: float
    pod: str
    uid: str
    seen: float  # the last time a reader saw it listed
    ended: float | None = None
    end: str | None = None  # TERMINATED, REPLACED or JOB_ENDED; None while not known
    cpu: float = 0.0  # vCPUs requested
    memory_gib: float = 0.0
    gpu: float = 0.0
    running: float | None = None  # when all its containers had first started; None: not yet
    hang_timeout: float = 0.0  # its launcher's --hang-timeout (0: no hang detection)

    @property
    def until(self) -> float:
        """Its end, or the last time it was seen: a lower bound while it runs."""
        return self.ended if self.ended is not None else max(self.seen, self.scheduled)

    @property
    def seconds(self) -> float:
        return max(0.0, self.until - self.scheduled)


@dataclass(frozen=True)
class PodTimes:
    """What `pods.json` holds: the run (so a teammate's machine can show it without its
    registry), the job's outcome and end as last seen, and every pod it had."""

    run: str
    env: str
    stack: str
    team: str | None
    component: str
    experiment: str | None
    outcome: str  # pending | running | succeeded | failed
    ended: float | None  # the job's end (its deciding condition), None while it runs
    pods: tuple[PodLife, ...] = field(default_factory=tuple)
    created: float | None = None  # the job object's creationTimestamp; None: not recorded
    # The progress readers saw in the store, in time order (trainstack.metrics.progress' marks).
    marks: tuple[Mark, ...] = ()
    # The restarts the API showed its readers (in place, a JobSet's, Kueue's preemption) and the
    # launchers' hang restarts they read beside the logs, so a teammate's machine, and a run
    # only `wait` watched, know them too: the deployer's registry is the only other place.
    restarts: tuple[Restart, ...] = ()

    @property
    def started(self) -> float | None:
        return min((p.scheduled for p in self.pods), default=None)

    @property
    def finished(self) -> float | None:
        """The last pod's end, once the job has ended."""
        if self.ended is None:
            return None
        return max((p.until for p in self.pods), default=self.ended)

    def to_json(self) -> str:
        """Byte-identical for the same content: pods in order, keys sorted."""
        doc = {
            **asdict(self),
            "version": VERSION,
            "pods": [asdict(p) for p in sorted(self.pods)],
            "marks": [_mark_json(m) for m in self.marks],
            "restarts": [asdict(r) for r in once(self.restarts)],
        }
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Stored:
    """Deployed runs' pod lifetimes as read from their stores (trainstack.deploy.podrecords):
    found by run id, why each other deployed run's were not (in words that group: out of
    reach from here, none recorded, damaged), and each damaged record as one line."""

    found: Mapping[str, PodTimes] = field(default_factory=dict)
    unread: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


def parse(text: str, where: str) -> PodTimes:
    """`pods.json` as written by to_json; anything else one UserError naming the field."""
    from trainstack import boundedjson

    try:
        doc = boundedjson.loads(text)
    except ValueError as err:
        raise UserError(f"{where}: not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise UserError(
            f"{where}: not a pod lifetimes record of version {VERSION}",
            hint="written by `trainstack status` or `wait`; a newer trainstack may read it",
        )
    at = f"{where}: "  # a top-level field is named `<file>: <field>`
    pods = doc.get("pods")
    if doc.get("outcome") not in OUTCOMES:
        raise UserError(
            f"{at}outcome: expected one of {', '.join(OUTCOMES)}, got {_shown(doc.get('outcome'))}"
        )
    if not isinstance(pods, list):
        raise UserError(f"{at}pods: expected a list")
    return PodTimes(
        run=_text(doc, "run", at),
        env=_text(doc, "env", at),
        stack=_text(doc, "stack", at),
        team=_text(doc, "team", at, optional=True),
        component=_text(doc, "component", at),
        experiment=_text(doc, "experiment", at, optional=True),
        outcome=_text(doc, "outcome", at),
        ended=_time(doc, "ended", at, optional=True),
        pods=tuple(_pod(p, f"{at}pods[{i}]") for i, p in enumerate(pods)),
        created=_time(doc, "created", at, optional=True),
        marks=_marks(doc.get("marks"), at),
        restarts=_restarts(doc.get("restarts"), at),
    )


def _restarts(raw: object, at: str) -> tuple[Restart, ...]:
    """The restarts kept; absent in a record written before they were."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise UserError(f"{at}restarts: expected a list")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise UserError(f"{at}restarts[{i}]: expected an object")
        where = f"{at}restarts[{i}]."
        code = item.get("exit_code")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise UserError(f"{where}exit_code: expected a whole number, got {_shown(code)}")
        counted = item.get("counted", True)
        if not isinstance(counted, bool):
            raise UserError(f"{where}counted: expected true or false, got {_shown(counted)}")
        out.append(
            Restart(
                at=_time(item, "at", where),
                role=_text(item, "role", where),
                index=_index(item.get("index"), where),
                exit_code=code,
                reason=_text(item, "reason", where),
                detail=_text(item, "detail", where, optional=True) or "",
                ran_seconds=_time(item, "ran_seconds", where, optional=True),
                counted=counted,
            )
        )
    return once(out)


def once(restarts: Iterable[Restart]) -> tuple[Restart, ...]:
    """Each restart once (a replica restarts once at an instant, as the registry keeps them),
    oldest first: several readers and records see the same ones."""
    found = {(r.at, r.role, r.index): r for r in restarts}
    return tuple(found[k] for k in sorted(found))


def _mark_json(mark: Mark) -> dict[str, object]:
    """A mark as progress.jsonl writes it: the first output, or a step reached."""
    return {"t": mark.t, "output": True} if mark.step is None else {"t": mark.t, "step": mark.step}


def _marks(raw: object, at: str) -> tuple[Mark, ...]:
    """The readers' marks; absent in a record written before they were kept."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise UserError(f"{at}marks: expected a list")
    out = []
    for i, item in enumerate(raw):
        where = f"{at}marks[{i}]."
        if not isinstance(item, dict):
            raise UserError(f"{at}marks[{i}]: expected an object")
        t = _time(item, "t", where)
        if item.get("output") is True:
            out.append(Mark(t, None))
        else:
            out.append(Mark(t, _time(item, "step", where, signed=True)))
    return tuple(sorted(out, key=lambda m: (m.t, m.step is not None, m.step or 0.0)))


def _pod(raw: object, pod: str) -> PodLife:
    if not isinstance(raw, dict):
        raise UserError(f"{pod}: expected an object")
    where = pod + "."
    return PodLife(
        role=_text(raw, "role", where),
        index=_index(raw.get("index"), where),
        scheduled=_time(raw, "scheduled", where),
        pod=_text(raw, "pod", where),
        uid=_text(raw, "uid", where),
        seen=_time(raw, "seen", where),
        ended=_time(raw, "ended", where, optional=True),
        end=_text(raw, "end", where, optional=True),
        cpu=_time(raw, "cpu", where),
        memory_gib=_time(raw, "memory_gib", where),
        gpu=_time(raw, "gpu", where),
        running=_time(raw, "running", where, optional=True),
        hang_timeout=_time(raw, "hang_timeout", where, optional=True) or 0.0,
    )


def _index(index: object, where: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise UserError(f"{where}index: expected a replica index (0 or more), got {_shown(index)}")
    return index


def _text(doc: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise UserError(f"{where}{key}: expected text, got {_shown(value)}")
    return value


def _time(
    doc: Mapping[str, Any], key: str, where: str, *, optional: bool = False, signed: bool = False
) -> Any:
    """A non-negative number (`signed`: any finite one, as a chart's step may be)."""
    value = doc.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}{key}: expected a number, got {_shown(value)}")
    if value < 0 and not signed:
        raise UserError(f"{where}{key}: cannot be negative ({value!r})")
    return float(value)


def _shown(value: object) -> str:
    """What a damaged file holds, quoted short with its control characters escaped."""
    from trainstack.excerpt import excerpt

    return excerpt(value) if isinstance(value, str) else excerpt(repr(value)).strip("'\"")
