"""A deployed run on the console: where it runs (the stack index, no CLI needed) and, when the
Pulumi CLI and the platform's credentials are at hand, its stack and its job on the cluster now
through the code `trainstack status` and `logs` use (trainstack.deploy.service), read without
recording anything. When they are not, the page says why instead."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trainstack.deploy.statusview import replica_rows
from trainstack.errors import UserError
from trainstack.extras import cluster_needed
from trainstack.registry.model import RunRecord

LIVE_TTL_S = 10.0  # a page reloaded within this long reuses what the cluster said
LOG_TAIL = 500


@dataclass(frozen=True)
class Live:
    """What `status` shows of a deployed run; `note` says why something is missing."""

    where: tuple[tuple[str, str], ...]  # env, stack, namespace, team, backend
    job: tuple[tuple[str, str], ...]  # outcome, message, conditions, waiting, last update
    replicas: tuple[tuple[str, ...], ...]  # replica, phase, restarts, exit, reason, pod
    outputs: tuple[tuple[str, str], ...]
    note: str


@dataclass(frozen=True)
class PodLog:
    lines: tuple[str, ...]
    note: str


_CACHE: dict[str, tuple[float, Live]] = {}
_LOCK = threading.Lock()


def _where(home: Path, record: RunRecord) -> tuple[tuple[str, str], ...]:
    from trainstack.deploy.index import RunIndex

    try:
        entries = RunIndex(home).entries()
    except UserError as err:
        return (("stack index", err.render()),)
    for e in entries:
        if e.registry_id == record.id or (e.stack == record.stack_name and e.run == record.name):
            return (
                ("environment", e.env),
                ("stack", e.stack),
                ("namespace", e.namespace or "-"),
                ("team", e.team or "-"),
                ("backend", e.backend),
            )
    return (("stack", record.stack_name or "-"),)


def live(home: Path, record: RunRecord) -> Live:
    with _LOCK:
        hit = _CACHE.get(record.id)
        if hit is not None and time.monotonic() - hit[0] < LIVE_TTL_S:
            return hit[1]
    found = _read(home, record)
    with _LOCK:
        _CACHE[record.id] = (time.monotonic(), found)
    return found


def _team(record: RunRecord) -> str | None:
    return record.tags.get("team") or None


def _env(record: RunRecord) -> str | None:
    if record.stack_name and "." in record.stack_name:
        return record.stack_name.split(".", 1)[0]
    return record.tags.get("env") or None


def _read(home: Path, record: RunRecord) -> Live:
    from trainstack.deploy import service

    where = _where(home, record)
    try:
        with cluster_needed():
            found = service.locate(record.name, _env(record), team=_team(record), home=home)
            stack = service.stack_status(found)
    except UserError as err:
        return Live(where, (), (), (), _note(err))
    last = f"{stack.last_kind} {stack.last_result}" if stack.last_kind else "none"
    job: list[tuple[str, str]] = [
        ("last update", last + (f" at {stack.last_end}" if stack.last_end else ""))
    ]
    outputs = tuple(
        sorted((k, v if isinstance(v, str) else repr(v)) for k, v in stack.outputs.items())
    )
    try:
        with cluster_needed():
            state = service.live(found, record=False)
    except UserError as err:
        return Live(where, tuple(job), (), outputs, _note(err))
    job.append(("job", f"{state.kind} {state.namespace}/{state.name}: {state.outcome}"))
    if state.message:
        job.append(("message", state.message))
    job.extend(
        (
            f"condition {c.type}",
            c.status
            + (f" {c.reason}" if c.reason else "")
            + (f": {c.message}" if c.message else ""),
        )
        for c in state.conditions
    )
    job.extend(("waiting", why) for why in state.waiting)
    return Live(where, tuple(job), replica_rows(state, no_reason=""), outputs, "")


def _note(err: UserError) -> str:
    return "live status unavailable: " + err.render()


def pod_log(home: Path, record: RunRecord, replica: str) -> PodLog:
    """The last lines of one replica's log, as `trainstack logs --tail` reads it: its pod's
    while the pods exist, the artifact store's after (OSS with credentials in the environment)."""
    from trainstack.deploy import logs, service
    from trainstack.logview import replica_named

    named = replica_named(replica)
    if named is None:
        return PodLog((), f"{replica!r} names no replica (role-index)")
    role, index = named
    out = bytearray()
    write: Callable[[bytes], None] = out.extend
    try:
        with cluster_needed():
            found = service.locate(record.name, _env(record), team=_team(record), home=home)
            logs.show(found, role=role, index=index, follow=False, tail=LOG_TAIL, write=write)
    except UserError as err:
        return PodLog((), "pod logs unavailable: " + err.render())
    text = out.decode("utf-8", errors="replace")
    return PodLog(tuple(text.splitlines()), "")
