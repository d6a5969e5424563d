"""stateful-protected: the platform's stateful resources (buckets, file systems, the registry,
team namespaces, CRDs) carry ``protect``, so no ``pulumi up`` or ``destroy`` deletes data."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.infra.platform.protection import STATEFUL_TYPES
from trainstack.platformnames import PLATFORM_PROJECT
from trainstack.policy.model import Context, Finding, Level, Resource, Rule


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if resource.project != PLATFORM_PROJECT:
        return  # a run's own claims and volumes live and die with the run's stack
    types = set(STATEFUL_TYPES) | set(config.get("types") or ())
    if resource.type in types and not resource.protect:
        yield Finding(
            "options.protect",
            "a stateful resource without protect",
            "create it with the platform's component_opts() (protection.py) or "
            "pulumi.ResourceOptions(protect=True, retain_on_delete=True)",
        )


RULE = Rule(
    id="stateful-protected",
    description="Stateful platform resources are protected.",
    level=Level.MANDATORY,
    defaults={"types": []},
    check=check,
)
