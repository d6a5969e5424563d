"""allowed-regions: cloud resources are created only in the environment's region(s)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    allowed = set(config.get("regions") or ()) or ({ctx.region} if ctx.region else set())
    region = resource.props.get("region")
    if allowed and region and str(region) not in allowed:
        yield Finding(
            "region",
            f"region {region!r} is not allowed ({', '.join(sorted(allowed))})",
            "use trainstack:region, or add the region to policy:rules.allowed-regions.regions",
        )


RULE = Rule(
    id="allowed-regions",
    description="Cloud providers (and so every cloud resource) only in allowed regions.",
    level=Level.MANDATORY,
    defaults={"regions": []},
    check=check,
    types=("pulumi:providers:alicloud",),
)
