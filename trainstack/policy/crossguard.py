"""The rules as a Pulumi CrossGuard policy pack (``policies/__main__.py`` calls ``pack``).

One ``ResourceValidationPolicy`` per rule; its validate function turns CrossGuard's
``ResourceValidationArgs`` into the same ``Resource`` the offline check builds and runs the same
rule. The stack's ``Context`` comes from the JSON file ``$TRAINSTACK_POLICY_CONTEXT`` names
(``trainstack policy context --env ENV`` writes it), or from the policy's config key ``context``;
the rule's settings from ``policy:rules`` of that environment, as offline, overridden by
CrossGuard's own policy config (``--policy-pack-config``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainstack.envnames import POLICY_CONTEXT_ENV as CONTEXT_ENV
from trainstack.policy.check import evaluate
from trainstack.policy.model import Context, Level, Resource
from trainstack.policy.rules import RULES
from trainstack.policy.settings import RuleSetting, settings

PACK_NAME = "trainstack"


def load_context(config: Mapping[str, Any]) -> Context | None:
    raw = config.get("context")
    if raw:
        return Context.from_json(raw)
    path = os.environ.get(CONTEXT_ENV)
    if path:
        return Context.from_json(Path(path).read_text())
    return None


def resource_of(args: Any) -> Resource:
    """CrossGuard's ``ResourceValidationArgs`` as the offline check's ``Resource``."""
    return Resource(
        type=args.resource_type,
        name=args.name,
        props=dict(args.props),
        protect=bool(args.opts.protect),
        project=Resource.project_of(args.urn),
    )


def validator(
    rule_id: str, env_values: Mapping[str, Any] | None = None
) -> Callable[[Any, Callable[..., None]], None]:
    """The validate function of one rule's policy: report each violation with its message."""

    def validate(args: Any, report_violation: Callable[..., None]) -> None:
        config = dict(args.get_config() or {})
        ctx = load_context(config)
        if ctx is None:
            return  # without a context the rule cannot judge; `policy context` writes one
        base = settings(env_values or {}, f"Pulumi.{ctx.env}.yaml")
        setting = next(s for s in base if s.rule.id == rule_id)
        overrides = {k: v for k, v in config.items() if k in setting.rule.defaults}
        one = RuleSetting(
            setting.rule,
            Level.MANDATORY,  # CrossGuard applies the level itself
            {**setting.config, **overrides},
        )
        for v in evaluate([resource_of(args)], ctx, [one]):
            report_violation(f"{v.field}: {v.found}. fix: {v.fix}", args.urn)

    return validate


def policies(env_values: Mapping[str, Any] | None = None) -> list[Any]:
    """One ``ResourceValidationPolicy`` per rule, at its level from ``env_values``."""
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

    levels = {s.rule.id: s.level for s in settings(env_values or {}, "policy pack")}
    return [
        ResourceValidationPolicy(
            name=rule.id,
            description=rule.description,
            enforcement_level=EnforcementLevel(levels[rule.id].value),
            validate=validator(rule.id, env_values),
        )
        for rule in RULES
    ]


def pack(env_values: Mapping[str, Any] | None = None) -> Any:
    """The ``PolicyPack`` (constructing it serves the pack to the Pulumi engine: CLI only)."""
    from pulumi_policy import PolicyPack

    return PolicyPack(name=PACK_NAME, policies=policies(env_values))


def env_values_from(project_root: Path, env: str | None) -> dict[str, Any]:
    """``policy:rules`` of ``Pulumi.<env>.yaml`` (``$TRAINSTACK_ENV``), as the offline check reads
    it; {} (the rules' defaults) when no environment is named."""
    if not env:
        return {}
    from trainstack.envfile import find_project, read_env

    values = read_env(find_project(project_root), env).values
    return {k: v for k, v in values.items() if k.startswith("policy:")}
