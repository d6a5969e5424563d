"""A deployed run's record in this user's registry: pending when its stack is created, running
once `up` succeeds, ended (failed, or cancelled by destroy) — the registry side of deploy."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from trainstack.deploy.settings import DeploySettings
from trainstack.errors import NotFoundError
from trainstack.spec.model import Run


def record_pending(settings: DeploySettings, run: Run, stack_name: str) -> str:
    from trainstack.registry import NewRun, Registry, RunKind

    with Registry.open(settings.home) as registry:
        record = registry.create(
            NewRun(
                name=run.name,
                component=run.component.name,
                component_version=run.component.version,
                kind=RunKind.CLUSTER,
                job_type=str(run.job_type.value),
                experiment=run.experiment,
                tags=dict(run.tags),
                spec_path=str(run.source) if run.source else None,
                stack_name=stack_name,
                outputs={name: b.uri for name, b in run.outputs.items()},
                parameters=dict(run.parameters),
            )
        )
    return record.id


def record_running(settings: DeploySettings, registry_id: str) -> None:
    from trainstack.registry import Registry

    with Registry.open(settings.home) as registry:
        registry.mark_running(registry_id, [])


def record_log_place(
    settings: DeploySettings, registry_id: str | None, outputs: Mapping[str, Any]
) -> None:
    """Where the run's logs were shipped (the stack's outputs), kept in the record: `destroy`
    removes the stack and its index entry, and `logs` still finds them through the registry."""
    from trainstack.infra.logplace import LOGS_OUTPUT, REGION_OUTPUT
    from trainstack.registry import Registry

    place, region = outputs.get(LOGS_OUTPUT), outputs.get(REGION_OUTPUT)
    if registry_id is None or not isinstance(place, str) or not place:
        return
    with Registry.open(settings.home) as registry:
        registry.record_log_place(registry_id, place, region if isinstance(region, str) else None)


def record_end(
    settings: DeploySettings, registry_id: str | None, *, failed: bool, reason: str
) -> None:
    from trainstack.registry import Registry, RunStatus

    if registry_id is None:
        return
    # NotFoundError: the registry was reset; the stack index is what destroy needs.
    with Registry.open(settings.home) as registry, suppress(NotFoundError):
        registry.finish(
            registry_id, RunStatus.FAILED if failed else RunStatus.CANCELLED, reason=reason
        )
