"""priority-cap: a team's pods use no priority class above the team's maxPriority (priority 9
would preempt every other team's jobs), nor Kubernetes' system classes, above every team's."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.platformnames import SYSTEM_PRIORITY_CLASSES
from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import pod_templates

_CLASS = re.compile(r"trainstack-priority-(\d+)")


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    caps = {**ctx.team_max_priority, **(config.get("maxPriority") or {})}
    for pod in pod_templates(resource.props):
        name = str(pod.spec.get("priorityClassName", ""))
        match = _CLASS.fullmatch(name)
        team = ctx.team_of(pod.namespace)
        if name in SYSTEM_PRIORITY_CLASSES and team is not None:
            yield Finding(
                f"{pod.path}.priorityClassName",
                f"{name} is Kubernetes' own class, above every team's cap (its cap quota "
                "admits no such pod)",
                "set spec.priority in the run instead",
            )
            continue
        if not match or team is None or team not in caps:
            continue
        if int(match.group(1)) > int(caps[team]):
            yield Finding(
                f"{pod.path}.priorityClassName",
                f"priority {match.group(1)} is above team {team!r}'s cap {caps[team]}",
                f"set spec.priority to at most {caps[team]} in the run",
            )


RULE = Rule(
    id="priority-cap",
    description="Pods use no priority above their team's maxPriority.",
    level=Level.MANDATORY,
    defaults={"maxPriority": {}},
    check=check,
    types=("kubernetes:",),
)
