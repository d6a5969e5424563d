"""A deployed run's record in this user's registry: pending when its stack is created, running
once `up` succeeds, ended (failed, or cancelled by destroy) — the registry side of deploy."""

from __future__ import annotations

from contextlib import suppress

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
