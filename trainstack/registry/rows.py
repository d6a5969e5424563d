"""Rows of the run registry's `runs` table and the records they hold: the conversions both ways,
pure functions (store.py owns the file, the connection and the errors)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType

from trainstack import boundedjson
from trainstack.errors import UserError
from trainstack.registry.model import (
    NewRun,
    ReplicaExit,
    Restart,
    RunKind,
    RunRecord,
    RunStatus,
)

# The `runs` columns in the order `parse_record` reads them.
COLUMNS = (
    "id, name, component, component_version, kind, job_type, experiment, tags, status,"
    " created_at, started_at, finished_at, exits, restarts, run_dir, runner_pid,"
    " runner_started_at, stack_name, spec_path, reason, outputs, parameters, created_by,"
    " log_place, log_region, resumed_from"
)


# The `restarts` columns in the order `parse_restart` reads them.
RESTART_COLUMNS = "at, role, idx, exit_code, reason, detail, ran_seconds, counted"


def parse_restart(row: tuple[object, ...]) -> Restart:
    at, role, idx, code, reason, detail, ran, counted = row
    return Restart(
        at=float(str(at)),
        role=str(role),
        index=int(str(idx)),
        exit_code=None if code is None else int(str(code)),
        reason=str(reason),
        detail=str(detail),
        ran_seconds=None if ran is None else float(str(ran)),
        counted=bool(counted),
    )


def exits_json(exits: Iterable[ReplicaExit]) -> str:
    # A fourth element only for stopped replicas: older rows (three elements) still read.
    return json.dumps(
        [[e.role, e.index, e.exit_code, *([True] if e.stopped else [])] for e in sorted(exits)]
    )


def check_storable(new: NewRun, runs: Path) -> None:
    """SQLite stores UTF-8: a path that is not (a file name in another encoding, read by Python
    with surrogate escapes) is one error naming it, before anything is recorded."""
    fields: dict[str, object] = {
        "spec path": new.spec_path,
        "run directory": str(runs),
        "stack": new.stack_name,
        "experiment": new.experiment,
        **{f"output {k}": v for k, v in new.outputs.items()},
        **{f"tag {k}": f"{k}={v}" for k, v in new.tags.items()},
    }
    for what, value in fields.items():
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                raise UserError(
                    f"the {what} {shown!r} is not valid UTF-8; the run registry "
                    "records names as UTF-8",
                    hint="rename it with UTF-8 characters only",
                ) from None


def parse_record(row: tuple[object, ...]) -> RunRecord:
    (
        run_id,
        name,
        component,
        version,
        kind,
        job_type,
        experiment,
        tags,
        status,
        created,
        started,
        finished,
        exits,
        restarts,
        run_dir,
        pid,
        pid_started,
        stack,
        spec,
        reason,
        outputs,
        parameters,
        created_by,
        log_place,
        log_region,
        resumed_from,
    ) = row
    return RunRecord(
        id=str(run_id),
        name=str(name),
        component=str(component),
        component_version=str(version),
        kind=RunKind(str(kind)),
        job_type=str(job_type),
        experiment=None if experiment is None else str(experiment),
        tags=MappingProxyType({str(k): str(v) for k, v in boundedjson.loads(str(tags)).items()}),
        status=RunStatus(str(status)),
        created_at=float(str(created)),
        started_at=None if started is None else float(str(started)),
        finished_at=None if finished is None else float(str(finished)),
        exits=tuple(
            ReplicaExit(
                str(role),
                int(index),
                None if code is None else int(code),
                stopped=bool(rest and rest[0]),
            )
            for role, index, code, *rest in boundedjson.loads(str(exits))
        ),
        restarts=int(str(restarts)),
        run_dir=None if run_dir is None else Path(str(run_dir)),
        runner_pid=None if pid is None else int(str(pid)),
        runner_started_at=None if pid_started is None else float(str(pid_started)),
        stack_name=None if stack is None else str(stack),
        spec_path=None if spec is None else str(spec),
        reason=None if reason is None else str(reason),
        outputs=MappingProxyType(
            {str(k): str(v) for k, v in boundedjson.loads(str(outputs)).items()}
        ),
        parameters=MappingProxyType(dict(boundedjson.loads(str(parameters)))),
        created_by=None if created_by is None else str(created_by),
        log_place=None if log_place is None else str(log_place),
        log_region=None if log_region is None else str(log_region),
        resumed_from=None if resumed_from is None else str(resumed_from),
    )
