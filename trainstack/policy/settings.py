"""Per-environment rule settings: ``policy:rules`` in ``Pulumi.<env>.yaml``.

    config:
      policy:rules:
        allowed-registries: {level: advisory, registries: [registry.example.com/ml]}
        no-host-access: {level: disabled}

Each entry may set ``level`` (advisory, mandatory, disabled) and any of the rule's configuration
keys; anything else is a ``ConfigError`` naming the key. Unset keys keep the rule's defaults.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.errors import ConfigError
from trainstack.infra.configread import did_you_mean
from trainstack.policy.model import Level, Rule
from trainstack.policy.rules import RULES

CONFIG_KEY = "policy:rules"


@dataclass(frozen=True)
class RuleSetting:
    rule: Rule
    level: Level
    config: Mapping[str, Any]


def settings(
    values: Mapping[str, Any], source: str, rules: tuple[Rule, ...] = RULES
) -> tuple[RuleSetting, ...]:
    raw: Any = values.get(CONFIG_KEY) or {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            raise ConfigError(f"{source}: {CONFIG_KEY}: not a mapping ({err})") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {CONFIG_KEY}: expected a mapping of rule id -> settings")
    by_id = {r.id: r for r in rules}
    for rule_id in raw:
        if rule_id not in by_id:
            raise ConfigError(
                f"{source}: {CONFIG_KEY}.{rule_id}: no such rule",
                hint=did_you_mean(str(rule_id), by_id) or f"rules: {', '.join(sorted(by_id))}",
            )
    out: list[RuleSetting] = []
    for rule in rules:
        entry = raw.get(rule.id) or {}
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{source}: {CONFIG_KEY}.{rule.id}: expected a mapping")
        level = rule.level
        if "level" in entry:
            try:
                level = Level(str(entry["level"]))
            except ValueError:
                raise ConfigError(
                    f"{source}: {CONFIG_KEY}.{rule.id}.level: expected advisory, mandatory or "
                    f"disabled, got {entry['level']!r}"
                ) from None
        config = dict(rule.defaults)
        for key, value in entry.items():
            if key == "level":
                continue
            if key not in rule.defaults:
                raise ConfigError(
                    f"{source}: {CONFIG_KEY}.{rule.id}.{key}: not a setting of this rule",
                    hint=did_you_mean(str(key), rule.defaults)
                    or f"settings: level, {', '.join(sorted(rule.defaults))}",
                )
            problem = _shape_problem(rule.defaults[key], value)
            if problem:
                raise ConfigError(
                    f"{source}: {CONFIG_KEY}.{rule.id}.{key}: expected {problem}, got "
                    f"{_shown(value)}",
                    hint=f"the default is {json.dumps(rule.defaults[key])}",
                )
            config[key] = value
        out.append(RuleSetting(rule, level, config))
    return tuple(out)


def _shape_problem(default: Any, value: Any) -> str | None:
    """What `value` should be, judged by the shape of the rule's default; None when it is.
    Without this a string where a list belongs (`registries: docker.io`) was iterated as its
    characters."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int | float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "a number"
        if not math.isfinite(value):
            return "a number (finite)"
        # The one numeric setting, headroom, is the fraction of a node kept free.
        return None if 0 <= value < 1 else "a number between 0 and 1"
    if isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return None if ok else "a list of strings"
    if isinstance(default, Mapping):
        ok = isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in value.items()
        )
        return None if ok else "a mapping of team -> integer"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"
