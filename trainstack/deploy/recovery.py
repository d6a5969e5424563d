"""A deployed run's recovery history, from what the API shows (trainstack.recovery's words).

A container restarted in place (restartPolicy OnFailure, `faultTolerance.unconditional`) keeps
its previous run in `lastState.terminated`: exit code, reason (`OOMKilled`), message (the
container's termination log, where trainstack's launcher writes `hung: ...`) and when it started
and finished. Kubernetes keeps only the last one, so `status`, called now and then, records each
restart it sees into the registry, where the history accumulates. A pod KubeDL recreates
(ExitCode) starts with an empty `lastState`: the failed one is gone with its pod. The launcher's
hang restarts in place never reach the API.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from trainstack import recovery
from trainstack.deploy.jobstate import JobState, ReplicaState
from trainstack.registry.model import Restart


def restarts(state: JobState) -> list[Restart]:
    """The restarts the job's pods show now, oldest first."""
    found = [r for r in (_restart(replica) for replica in state.replicas) if r is not None]
    return sorted(found)


def _restart(replica: ReplicaState) -> Restart | None:
    last = replica.last
    if last is None or replica.restarts < 1:
        return None
    finished, started = _time(last.finished_at), _time(last.started_at)
    if finished is None:
        return None
    message = (last.message or "").strip()
    if last.reason == recovery.OOM_KILLED:
        reason = recovery.OOM_KILLED
    elif message.startswith(f"{recovery.HUNG}:"):
        reason = recovery.HUNG
    else:
        reason = recovery.exit_reason(last.exit_code)
    detail = message[:500] or f"{replica.pod}: container restarted by the kubelet"
    return Restart(
        at=finished,
        role=replica.role,
        index=replica.index,
        exit_code=last.exit_code,
        reason=reason,
        detail=detail,
        ran_seconds=None if started is None else max(0.0, finished - started),
    )


def _time(text: str | None) -> float | None:
    """An RFC 3339 time as the API writes it (`2026-11-30T09:00:39Z`)."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def history(home: Path, registry_id: str | None, state: JobState | None) -> list[Restart]:
    """What `status` lists: the registry's history of the run (every restart any earlier
    `status` saw) when this user's registry has it, else what the pods show now."""
    from trainstack.errors import NotFoundError
    from trainstack.registry import Registry

    if registry_id is not None:
        with Registry.open(home) as registry:
            try:
                registry.get(registry_id)
            except NotFoundError:
                pass
            else:
                return registry.restarts(registry_id)
    return restarts(state) if state is not None else []
