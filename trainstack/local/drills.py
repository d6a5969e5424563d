"""Preemption drills: `trainstack run RUN --local --preempt ROLE-INDEX@SECONDS` (repeatable).

At SECONDS after the replicas start, that replica's "pod" is deleted as the API server deletes a
pod for a preemption or a node drain — SIGTERM, the grace period (`--grace`), SIGKILL — and
judged as the platform's Kubernetes (1.27 or later) and its controller judge a deleted pod
(trainstack.kubedl.DeletedPod, through the supervisor's policy): the kubelet marks it Failed, so
under ExitCode it is recreated, counted, and otherwise the run fails. Its preloaded outputs
(checkpoints) are what a new pod would see: the run directory's. The restart is recorded with
reason `preempted`. The drill proves that a component resumes from its checkpoint.

A drill that finds its replica not started or already exited, or that lands as the job finishes
(the others all exit 0 after it), misses and says so (the supervisor's `_gone` and
`_finished_with_peers`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trainstack import recovery
from trainstack.errors import UserError
from trainstack.local.supervisor import Supervisor

_PREEMPT = re.compile(r"([a-z]+)-(\d+)@(\d+(?:\.\d+)?)")


@dataclass(frozen=True, order=True)
class Preemption:
    seconds: float
    key: str  # "role-index"


def parse(texts: Iterable[str]) -> tuple[Preemption, ...]:
    """`master-0@2` → Preemption(2.0, "master-0"); one UserError for a malformed one."""
    out = []
    for text in texts:
        m = _PREEMPT.fullmatch(text.strip())
        if m is None:
            raise UserError(
                f"--preempt {text!r}: expected ROLE-INDEX@SECONDS",
                hint="--preempt master-0@30 deletes master-0's pod 30 s after the start",
            )
        out.append(Preemption(float(m.group(3)), f"{m.group(1)}-{int(m.group(2))}"))
    return tuple(sorted(out))


def check(preemptions: Sequence[Preemption], replicas: Iterable[str]) -> None:
    """Every drill names one of the run's replicas."""
    have = list(replicas)
    for p in preemptions:
        if p.key not in have:
            raise UserError(
                f"--preempt {p.key}@{p.seconds:g}: the run has no replica {p.key}",
                hint=f"its replicas: {', '.join(have)}",
            )


class Drill:
    """Timers that delete replicas' pods through the supervisor (thread-safe: it only appends)."""

    def __init__(self, supervisor: Supervisor, preemptions: Sequence[Preemption]) -> None:
        self._timers = [
            threading.Timer(
                p.seconds,
                supervisor.request_delete,
                args=(p.key,),
                kwargs={"reason": recovery.PREEMPTED},
            )
            for p in preemptions
        ]
        for timer in self._timers:
            timer.daemon = True

    def start(self) -> None:
        for timer in self._timers:
            timer.start()

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
