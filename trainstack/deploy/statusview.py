"""What `trainstack status` prints as text: a deployed run's stack, then its job on the cluster
(conditions, why it waits, a table of replicas, the recovery history), and the table of every
deployed run; tables laid out by trainstack.texttable, so the verb keeps no layout."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from trainstack import recovery as words
from trainstack.texttable import plain, table

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry
    from trainstack.deploy.jobstate import JobState
    from trainstack.deploy.service import StackStatus
    from trainstack.registry.model import Restart


def document(
    result: StackStatus, state: JobState | None, problem: str | None, restarts: Sequence[Restart]
) -> dict[str, Any]:
    """`status RUN --json`: the stack, the job (or why it could not be read), the restarts."""
    return {
        "run": asdict(result.entry),
        "lastUpdate": {
            "kind": result.last_kind,
            "result": result.last_result,
            "end": result.last_end,
        },
        "outputs": result.outputs,
        "job": asdict(state) if state else None,
        "jobError": problem,
        "restarts": [{**asdict(r), "replica": r.key} for r in restarts],
    }


def stack_lines(result: StackStatus) -> list[str]:
    entry = result.entry
    last = f"{result.last_kind} {result.last_result}" if result.last_kind else "none"
    return [
        f"{entry.run}  env {entry.env}  stack {entry.stack}  ({entry.backend})",
        f"  component {entry.component}@{entry.version}"
        + (f"  experiment {entry.experiment}" if entry.experiment else ""),
        f"  last update: {last}" + (f" at {result.last_end}" if result.last_end else ""),
        *(
            f"  {key}: {value if isinstance(value, str) else json.dumps(value)}"
            for key, value in sorted(result.outputs.items())
        ),
    ]


def job_lines(state: JobState, restarts: Sequence[Restart]) -> list[str]:
    lines = [
        f"job {state.kind} {state.namespace}/{state.name}: {state.outcome}"
        + (f" ({state.message})" if state.message else "")
    ]
    for cond in state.conditions:
        lines.append(
            f"  condition {cond.type}={cond.status}"
            + (f" {cond.reason}" if cond.reason else "")
            + (f" since {cond.since}" if cond.since else "")
            + (f": {cond.message}" if cond.message else "")
        )
    lines += [f"  waiting: {why}" for why in state.waiting]
    if state.replicas:
        lines.append(replicas(state))
    else:
        lines.append("  no pods (yet, or cleaned up)")
    lines += [f"  restart: {words.describe(r)}" for r in restarts]
    return lines


REPLICA_COLUMNS = ("replica", "phase", "restarts", "exit", "reason", "pod")


def replica_rows(state: JobState, *, no_reason: str = "-") -> tuple[tuple[str, ...], ...]:
    """Each replica's cells under REPLICA_COLUMNS: for `status` and the console's run page."""
    return tuple(
        (
            f"{r.role}-{r.index}",
            r.phase,
            str(r.restarts),
            "-" if r.exit_code is None else str(r.exit_code),
            r.reason or no_reason,
            r.pod,
        )
        for r in state.replicas
    )


def replicas(state: JobState) -> str:
    return plain(table(REPLICA_COLUMNS, list(replica_rows(state))), indent="  ")


def deployed(entries: Sequence[StackEntry]) -> str:
    """Every deployed run, one a row (a teammate's too: read from the run stacks' tags)."""
    rows = [
        (
            e.run,
            e.env,
            e.team or "-",
            f"{e.outputs.get('kind', '?')} {e.outputs.get('namespace', '?')}/"
            f"{e.outputs.get('jobName', '?')}",
            f"{e.component}@{e.version}",
        )
        for e in entries
    ]
    return plain(table(("run", "env", "team", "job", "component"), rows))
