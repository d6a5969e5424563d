"""A run rendered for an environment: the run as it goes to the platform (every output given a
persistent place in the artifact store), its manifests rendered for the cluster the platform's
outputs describe, and where its replicas' logs go. What `deploy`, `plan RUN`, `policy check RUN`
and `render --env` share; below all of them (deploy, plan and policy each import this, never
each other, for it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from trainstack.infra.logplace import LOGS_OUTPUT, REGION_OUTPUT, log_place
from trainstack.infra.run.artifacts import (
    METRICS_DIR,
    artifact_store,
    persist_outputs,
    place,
    team_of,
)
from trainstack.infra.run.options import PlatformOutputs, render_options
from trainstack.render.options import RenderOptions
from trainstack.render.overrides import Overrides
from trainstack.spec.model import Run


def for_platform(
    run: Run,
    platform_outputs: Mapping[str, Any],
    env: str,
    templates: Overrides | None = None,
) -> tuple[Run, list[dict[str, Any]]]:
    """The run as it goes to the platform (every output with a persistent place) and its
    manifests, rendered for the cluster the platform outputs describe, with the platform
    project's `templates` (render/overrides.py) before the packaged ones."""
    completed, manifests, _ = placed(run, platform_outputs, env, templates)
    return completed, manifests


def placed(
    run: Run,
    platform_outputs: Mapping[str, Any],
    env: str,
    templates: Overrides | None = None,
) -> tuple[Run, list[dict[str, Any]], dict[str, str]]:
    """`for_platform`, and where the replicas' logs go (the `logs` URI and the platform's
    `region`, for reading them back after the pods: deploy/logstore.py), when it is known."""
    from trainstack.render import render_run

    completed, options = for_environment(platform_outputs, run, env)
    logs: dict[str, str] = {}
    if options.logs is not None:
        logs[LOGS_OUTPUT] = options.logs.uri
        region = PlatformOutputs.read(platform_outputs, env).region
        if region:
            logs[REGION_OUTPUT] = region
    return completed, render_run(completed, options=options, templates=templates), logs


def render(
    run: Run,
    platform_outputs: Mapping[str, Any],
    env: str,
    templates: Overrides | None = None,
) -> list[dict[str, Any]]:
    """The run's manifests, rendered for the cluster the platform outputs describe."""
    return for_platform(run, platform_outputs, env, templates)[1]


def for_environment(
    outputs: Mapping[str, Any] | PlatformOutputs, run: Run, env: str
) -> tuple[Run, RenderOptions]:
    """The run as it goes to ``env`` (unbound outputs placed in the artifact store) and the
    options it renders with: what ``deploy``, ``plan RUN`` and ``render --env`` all use."""
    platform = PlatformOutputs.read(outputs, env)
    options = render_options(platform, run, env)
    store = artifact_store(platform, env)
    team = team_of(platform, options.namespace)
    completed = persist_outputs(run, store, team, env)
    if store is not None:
        options = replace(
            options,
            metrics=place(store, team, run.name, METRICS_DIR),
            logs=log_place(store, team, run.name, keep=run.keep_logs),
        )
    return completed, options
