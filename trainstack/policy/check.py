"""Run the rules over a stack's resources: ``trainstack policy check``, ``plan`` and ``deploy``.

Resources come from ``trainstack plan`` (the program run under mocks) or, in ``deploy``, from the
manifests the run program registers unchanged (``infra.run.program.register``): the same props
under the same type token and name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.policy.context import build_context
from trainstack.policy.model import Context, Level, Report, Resource, Violation
from trainstack.policy.settings import RuleSetting, settings

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan
    from trainstack.policy.budgets import StoreReader


def evaluate(
    resources: Iterable[Resource], ctx: Context, rule_settings: Sequence[RuleSetting]
) -> tuple[Violation, ...]:
    found: list[Violation] = []
    for resource in resources:
        for s in rule_settings:
            if s.level is Level.DISABLED or not s.rule.applies(resource.type):
                continue
            for f in s.rule.check(resource, ctx, s.config):
                found.append(
                    Violation(
                        rule=s.rule.id,
                        level=s.level,
                        resource=f"{resource.type}::{resource.name}",
                        field=f.field,
                        found=f.found,
                        fix=f.fix,
                        description=s.rule.description,
                    )
                )
    return tuple(found)


def from_plan(plan: Plan) -> list[Resource]:
    return [
        Resource(type=r.type, name=r.name, props=r.inputs, protect=r.protect, project=plan.project)
        for r in plan.resources
        if r.op == "create"
    ]


def type_token(manifest: Mapping[str, Any]) -> str:
    """The Pulumi Kubernetes provider's type token for a manifest's apiVersion and kind."""
    group, _, version = str(manifest.get("apiVersion", "")).rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{manifest.get('kind', '')}"


def from_manifests(manifests: Iterable[Mapping[str, Any]]) -> list[Resource]:
    from trainstack.infra.run.program import resource_name
    from trainstack.platformnames import RUNS_PROJECT

    return [
        Resource(type=type_token(m), name=resource_name(m), props=m, project=RUNS_PROJECT)
        for m in manifests
    ]


def env_settings(
    env: str, project_start: Path | None = None, *, required: bool = True
) -> tuple[Mapping[str, Any], tuple[RuleSetting, ...]]:
    """ENV's config and rule settings. ``required=False`` (deploy, which reads the platform's
    live outputs and may run outside the project): no project means the rules' defaults."""
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import NotFoundError

    try:
        project = find_project(project_start)
        values: Mapping[str, Any] = read_env(project, env).values
    except NotFoundError:
        if required:
            raise
        values = {}
    return values, settings(values, f"Pulumi.{env}.yaml")


def context_for(
    env: str,
    outputs: Mapping[str, Any],
    project_start: Path | None = None,
    *,
    required: bool = True,
    component: str | None = None,
    stores: StoreReader | None = None,
) -> tuple[Context, tuple[RuleSetting, ...]]:
    """`component`: the run's, whose typical duration projects a job without a timeout;
    `stores`: what reads deployed runs' pod lifetimes from their stores, to price their team's
    spending (trainstack.policy.budgets)."""
    from trainstack.policy.budgets import with_budgets

    values, rule_settings = env_settings(env, project_start, required=required)
    base = build_context(env, values, outputs)
    ctx = with_budgets(base, values, component, f"Pulumi.{env}.yaml", stores)
    return ctx, rule_settings


def check_plan(
    plan: Plan,
    env: str,
    target: str,
    outputs: Mapping[str, Any],
    project_start: Path | None = None,
    stores: StoreReader | None = None,
) -> Report:
    ctx, rule_settings = context_for(
        env, outputs, project_start, component=plan.component, stores=stores
    )
    return Report(target, env, evaluate(from_plan(plan), ctx, rule_settings))


def budget_lines(
    plan: Plan,
    env: str,
    outputs: Mapping[str, Any],
    project_start: Path | None = None,
    stores: StoreReader | None = None,
) -> list[str]:
    """`plan`'s words on each job of a budgeted team: its projected cost and what remains."""
    from trainstack.policy.rules.budget import projection

    ctx, _ = context_for(env, outputs, project_start, component=plan.component, stores=stores)
    found = (projection(r, ctx) for r in from_plan(plan))
    return [p.line() for p in found if p is not None]


def check_run(
    run_file: Path, env: str, project_start: Path | None = None, stores: StoreReader | None = None
) -> Report:
    """``trainstack plan RUN --env ENV``, then the rules over what it registers."""
    from trainstack.envfile import find_project
    from trainstack.plan import service

    plan = service.plan_run(run_file, env, project_start)
    outputs, _ = service.platform_outputs(find_project(project_start), env)
    return check_plan(plan, env, str(run_file), outputs, project_start, stores)


def check_platform(env: str, project_start: Path | None = None) -> Report:
    from trainstack.plan import service

    plan = service.plan_platform(env, project_start)
    return check_plan(plan, env, "platform", plan.outputs, project_start)


def check_manifests(
    manifests: Iterable[Mapping[str, Any]],
    env: str,
    target: str,
    outputs: Mapping[str, Any],
    project_start: Path | None = None,
    stores: StoreReader | None = None,
) -> Report:
    """``deploy``: the rules over the objects about to be registered, with the live outputs."""
    ctx, rule_settings = context_for(env, outputs, project_start, required=False, stores=stores)
    return Report(target, env, evaluate(from_manifests(manifests), ctx, rule_settings))


def enforce(report: Report) -> None:
    """Raise ``PolicyError`` (exit 1) listing the violations when a mandatory rule fired."""
    from trainstack.errors import PolicyError
    from trainstack.policy.report import text

    if report.mandatory:
        raise PolicyError(
            f"policy: {len(report.mandatory)} mandatory violation(s); nothing "
            f"was deployed\n{text([report])}",
            hint="fix the run, or change the rule's level for this environment "
            "(policy:rules in Pulumi.<env>.yaml, docs/policies.md)",
        )
