"""The words of a run's recovery history (registry `Restart`s), local and deployed alike: why a
replica's attempt ended and it was started again.

`OOMKilled` and `Evicted` are Kubernetes' own reasons (a container's `lastState.terminated.reason`,
a pod's `status.reason`); `hung` is the in-container launcher's (trainstack.launcher);
`preempted` a pod deleted through the API (a preemption drill, a drain); `elastic: ...` a worker
restarted in place by torchrun's elastic agent; otherwise the signal
that ended the process (`SIGKILL`) or what the exit code means.
"""

from __future__ import annotations

import json
import signal
import time
from dataclasses import dataclass

from trainstack.launcher import HANG_REASON, HUNG_EXIT_CODE
from trainstack.registry.model import Restart

OOM_KILLED = "OOMKilled"
EVICTED = "Evicted"
HUNG = HANG_REASON
PREEMPTED = "preempted"
DELETED = "deleted"
# torchrun's elastic agent restarted a replica's worker in place (spec.torchElastic): because the
# worker failed, or because a peer left or joined the rendezvous (trainstack.local.elastic).
ELASTIC_FAILED = "elastic: worker failed"
ELASTIC_REJOINED = "elastic: rendezvous changed"
# A JobSet's failure policy recreated every Job (Kubeflow Trainer's runtimes): the whole set.
SET_RESTART = "whole set restarted"

# What a few exit codes mean where no signal killed the process.
_MEANINGS = {
    1: "error",
    2: "usage error",
    124: "deadline passed (timeout)",
    126: "command not executable",
    127: "command not found",
    HUNG_EXIT_CODE: "hung (launcher)",
}


def exit_reason(code: int | None, *, oom: bool = False) -> str:
    """The reason for an attempt that ended with `code` (128+N: death by signal N)."""
    if code is None:
        return "unknown"
    if oom:
        return OOM_KILLED
    if code > 128:
        try:
            return signal.Signals(code - 128).name
        except ValueError:
            pass
    return _MEANINGS.get(code, f"exit code {code}")


def describe(restart: Restart) -> str:
    """One line of the recovery history, for `runs show`, `status` and the report."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(restart.at))
    code = "" if restart.exit_code is None else f", exit {restart.exit_code}"
    ran = "" if restart.ran_seconds is None else f", after {restart.ran_seconds:.1f}s"
    counted = "" if restart.counted else " (not counted against maxRestarts)"
    detail = f": {restart.detail}" if restart.detail else ""
    return f"{when}  {restart.key}  {restart.reason}{code}{ran}{counted}{detail}"


@dataclass(frozen=True)
class LauncherRecord:
    """One line of a launcher's `<role>-<index>.restarts.jsonl`, read: a restart in place, or
    (`restart` None) the final hang that ended the replica, said in `final`."""

    restart: Restart | None
    final: str | None


def launcher_record(line: bytes, role: str, index: int) -> LauncherRecord | None:
    """A launcher's record of `role`-`index` (a local run's logs folder, or a deployed run's on
    the artifact store); None for a line that is not one. Its restarts are not counted: KubeDL
    never sees a restart in place."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    detail = str(event.get("detail", ""))[:500]
    reason = str(event.get("reason", ""))[:100] or "unknown"
    if event.get("event") == "failed":
        return LauncherRecord(
            None, f"{reason}: {detail}; {event.get('hangRestarts', 0)} hang restart(s)"
        )
    if event.get("event") != "restart":
        return None
    code = event.get("exitCode")
    ran, at = event.get("ranSeconds"), event.get("time")
    return LauncherRecord(
        Restart(
            at=float(at) if isinstance(at, int | float) else time.time(),
            role=role,
            index=index,
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            reason=reason,
            detail=f"restarted in place by the launcher: {detail}",
            ran_seconds=float(ran) if isinstance(ran, int | float) else None,
            counted=False,
        ),
        None,
    )
