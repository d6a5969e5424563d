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
from trainstack.deploy.index import StackEntry
from trainstack.deploy.jobstate import JobState, ReplicaState
from trainstack.launcher import EVENTS_SUFFIX
from trainstack.registry.model import Restart
from trainstack.trainer.jobset import RESTARTING_CONDITION


def restarts(state: JobState) -> list[Restart]:
    """The restarts the job's pods show now, oldest first; for a TrainJob, its JobSet's latest
    whole-set restart too."""
    found = [r for r in (_restart(replica) for replica in state.replicas) if r is not None]
    latest = _set_restart(state)
    return sorted(found if latest is None else [*found, latest])


def _set_restart(state: JobState) -> Restart | None:
    """The JobSet's latest whole-set restart while its RestartingJobSet condition is True (the
    failed pods go with their Jobs): recorded under `jobset-<attempt>`, its detail the
    condition's message naming the first Job that failed (JobSet v0.12.0
    pkg/controllers/failure_policy.go:228-262). The count is in `JobState.set_restarts` however
    late `status` reads it."""
    cond = next(
        (c for c in state.conditions if c.type == RESTARTING_CONDITION and c.status == "True"),
        None,
    )  # once the new Jobs are ready it turns False, its message "all jobs are ready"
    at = parse_time(cond.since) if cond is not None else None
    if state.set_restarts < 1 or cond is None or at is None:
        return None
    return Restart(
        at=at,
        role="jobset",
        index=state.set_restarts,
        exit_code=None,
        reason=recovery.SET_RESTART,
        detail=(cond.message or "")[:500],
    )


def _restart(replica: ReplicaState) -> Restart | None:
    last = replica.last
    if last is None or replica.restarts < 1:
        return None
    finished, started = parse_time(last.finished_at), parse_time(last.started_at)
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


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time as the API writes it (`2026-11-30T09:00:39Z`)."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def history(
    home: Path, registry_id: str | None, state: JobState | None, stored: list[Restart]
) -> list[Restart]:
    """What `status` lists: the registry's history of the run (every restart any earlier
    `status` saw, and the launchers' records read from the store now, kept there too) when this
    user's registry has it, else what the pods show now and the store holds."""
    from trainstack.errors import NotFoundError
    from trainstack.registry import Registry

    if registry_id is not None:
        with Registry.open(home) as registry:
            try:
                registry.get(registry_id)
            except NotFoundError:
                pass
            else:
                for restart in stored:  # kept once however often status reads them
                    registry.record_restart(registry_id, restart)
                return registry.restarts(registry_id)
    return sorted([*(restarts(state) if state is not None else []), *stored])


def from_store(entry: StackEntry, mount: Path | None) -> list[Restart] | None:
    """The hang restarts in place the run's launchers recorded beside its logs in the artifact
    store (trainstack.render.pod: `--events-dir` with the logs), which the API never shows;
    None where the store cannot be read from here (a claim without `--store`, OSS without
    credentials in the environment) or the run ships no logs."""
    import tempfile

    from trainstack.deploy import logstore
    from trainstack.errors import UserError
    from trainstack.infra.logplace import LOGS_OUTPUT, REGION_OUTPUT

    uri = entry.outputs.get(LOGS_OUTPUT)
    if not uri:
        return None
    uri = str(uri)
    if uri.startswith("oss://") and not logstore.has_credentials():
        return None
    if not uri.startswith("oss://") and mount is None:
        return None
    region = entry.outputs.get(REGION_OUTPUT)
    found: list[Restart] = []
    with tempfile.TemporaryDirectory(prefix="trainstack-restarts-") as tmp:
        try:
            stored = logstore.locate(
                uri,
                mount=mount,
                into=Path(tmp),
                endpoint=logstore.oss_endpoint(str(region) if region else None),
                records=True,
            )
        except UserError:
            return None  # nothing there yet: the run has not restarted anything in place
        for path in sorted(stored.folder.glob("*-*" + EVENTS_SUFFIX)):
            found += _records(stored.root, path)
    return sorted(found)


def _records(root: Path, path: Path) -> list[Restart]:
    from trainstack.logview import replica_named
    from trainstack.regularfile import bounded_lines, open_within

    found = replica_named(path.name.removesuffix(EVENTS_SUFFIX))
    if found is None:
        return []
    role, index = found
    out: list[Restart] = []
    try:
        with open_within(root, path) as fh:
            for line in bounded_lines(fh):
                record = recovery.launcher_record(line, role, index)
                if record is not None and record.restart is not None:
                    out.append(record.restart)
    except OSError:
        return out  # a link out of the store, a FIFO: not read
    return out
