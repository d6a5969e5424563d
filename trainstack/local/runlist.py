"""`trainstack runs list`: recorded runs (local and deployed) as a table or as JSON, optionally
ranked by one metric, best first. The CLI only parses options and prints what this returns."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from trainstack import texttable
from trainstack.humanize import human_seconds
from trainstack.registry.model import RunRecord

if TYPE_CHECKING:
    from trainstack.metrics.podtimes import PodTimes


@dataclass(frozen=True)
class Listing:
    records: tuple[RunRecord, ...]
    metric: str | None = None
    best: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # id -> value
    # --cost: id -> (resource-time, cost, idle share), as shown
    costs: Mapping[str, tuple[str, str, str]] | None = None


def with_costs(
    found: Listing,
    env: str | None,
    project: Path | None,
    pods: Mapping[str, PodTimes] | None = None,
) -> Listing:
    """The listing with each run's resource-time and cost (trainstack.metrics.cost); `pods`:
    deployed runs' pod lifetimes, by run id."""
    from trainstack.metrics import cost

    priced = cost.priced(found.records, env, project, pods)
    shown = {k: p.cells() for k, p in priced.items()}
    return replace(found, costs=MappingProxyType(shown))


def listing(records: Sequence[RunRecord], metric: str | None = None) -> Listing:
    """The records as listed; with `metric`, ranked by each run's best value of it."""
    if not metric:
        return Listing(tuple(records))
    # Imported here: reading metrics loads numpy, which a plain listing does not need.
    from trainstack.metrics.listing import rank
    from trainstack.metrics.values import number

    ranked = rank(records, metric)
    return Listing(
        tuple(item.record for item in ranked),
        metric,
        MappingProxyType(
            {item.record.id: number(item.value.best) if item.value else "-" for item in ranked}
        ),
    )


def to_json(found: Listing) -> list[dict[str, Any]]:
    return [
        {
            "id": r.id,
            "name": r.name,
            "status": str(r.status),
            "component": f"{r.component}@{r.component_version}",
            "kind": str(r.kind),
            "experiment": r.experiment,
            "tags": dict(r.tags),
            "created_at": r.created_at,
            "duration": r.duration,
            "restarts": r.restarts,
            **(
                {"metric": {"name": found.metric, "best": found.best[r.id]}} if found.metric else {}
            ),
            **(
                {
                    "cost": dict(
                        zip(("resourceTime", "cost", "idleShare"), found.costs[r.id], strict=True)
                    )
                }
                if found.costs is not None
                else {}
            ),
        }
        for r in found.records
    ]


def table(found: Listing) -> str:
    metric = found.metric
    columns = (
        ("id", "status", "component", "experiment", "created", "duration", "restarts")
        + ((metric,) if metric else ())
        + (("resource-time", "cost", "idle") if found.costs is not None else ())
    )
    rows = [
        (
            r.id,
            str(r.status),
            f"{r.component}@{r.component_version}",
            r.experiment or "-",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created_at)),
            human_seconds(r.duration),
            str(r.restarts),
        )
        + ((found.best[r.id],) if metric else ())
        + (found.costs[r.id] if found.costs is not None else ())
        for r in found.records
    ]
    return texttable.plain(texttable.table(columns, rows))
