"""A deployed run's pod lifetimes: what its resource-time and cost are computed from, kept as
`pods.json` beside its shipped logs in the artifact store (trainstack.infra.logplace), where a
teammate and a later machine read it (trainstack.deploy.podrecords writes it).

Each pod is counted from when the scheduler bound it to a node (its PodScheduled condition) to
when it ended: its containers' last `finishedAt` once the pod is Succeeded or Failed; for a pod
that vanished (deleted, preempted, evicted) the scheduling of the pod that replaced it in the
same replica, else the job's end; for one still running, the last time it was seen. A restart
in place keeps its pod, so its time is inside the pod's; a recreated pod is a pod of its own.
What it costs is its requests (every container's `resources.requests`) × that time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainstack.errors import UserError

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
        doc = {**asdict(self), "version": VERSION, "pods": [asdict(p) for p in sorted(self.pods)]}
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"


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
    )


def _pod(raw: object, pod: str) -> PodLife:
    if not isinstance(raw, dict):
        raise UserError(f"{pod}: expected an object")
    where = pod + "."
    index = raw.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise UserError(f"{where}index: expected a replica index (0 or more), got {_shown(index)}")
    return PodLife(
        role=_text(raw, "role", where),
        index=index,
        scheduled=_time(raw, "scheduled", where),
        pod=_text(raw, "pod", where),
        uid=_text(raw, "uid", where),
        seen=_time(raw, "seen", where),
        ended=_time(raw, "ended", where, optional=True),
        end=_text(raw, "end", where, optional=True),
        cpu=_time(raw, "cpu", where),
        memory_gib=_time(raw, "memory_gib", where),
        gpu=_time(raw, "gpu", where),
    )


def _text(doc: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise UserError(f"{where}{key}: expected text, got {_shown(value)}")
    return value


def _time(doc: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}{key}: expected a number, got {_shown(value)}")
    if value < 0:
        raise UserError(f"{where}{key}: cannot be negative ({value!r})")
    return float(value)


def _shown(value: object) -> str:
    """What a damaged file holds, quoted short with its control characters escaped."""
    from trainstack.excerpt import excerpt

    return excerpt(value) if isinstance(value, str) else excerpt(repr(value)).strip("'\"")
