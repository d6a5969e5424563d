"""What a local run whose runner died left running, ended before the next run starts.

The run's sidecar (trainstack.local.deadman) normally ends a dead runner's replicas. Where it
died too (both SIGKILLed), or a process escaped its sweep (it left its group with setsid), what
still carries the tag of a run whose runner is gone is a leftover replica (the supervisor tags
processes with the run id: trainstack.local.proctags), holding memory and GPUs. The next
`run --local` of the same home ends them; verbs that only read the registry mark such runs
interrupted and touch no process.
"""

from __future__ import annotations

from trainstack.local.proctags import kill_tagged, tags_in_use
from trainstack.registry import Registry


def reap(reg: Registry) -> list[str]:
    """Record the runs whose runner is gone as interrupted and end every process still tagged
    with one of them; returns the ids of the runs newly marked."""
    marked = reg.mark_interrupted()
    for run_id in reg.orphaned_tags(tags_in_use()):
        kill_tagged(run_id)
    return marked
