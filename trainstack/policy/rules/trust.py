"""trust-oidc-sub: a RAM role that OIDC identities may assume names the one service account
(``oidc:sub``); without it every pod of the cluster can assume the role."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule

ROLE_TYPES = ("alicloud:ram/role:Role",)
_DOCUMENT_KEYS = ("assumeRolePolicyDocument", "document")


def _statements(doc: Any) -> list[Mapping[str, Any]]:
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return []
    statements = doc.get("Statement") if isinstance(doc, Mapping) else None
    if isinstance(statements, Mapping):
        statements = [statements]
    return [s for s in statements or () if isinstance(s, Mapping)]


def _sub_values(statement: Mapping[str, Any]) -> list[str]:
    values: list[str] = []
    for conditions in (statement.get("Condition") or {}).values():
        if isinstance(conditions, Mapping) and "oidc:sub" in conditions:
            sub = conditions["oidc:sub"]
            values.extend(str(v) for v in (sub if isinstance(sub, list) else [sub]))
    return values


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    for key in _DOCUMENT_KEYS:
        for i, st in enumerate(_statements(resource.props.get(key))):
            principal = st.get("Principal") or {}
            if st.get("Effect") != "Allow" or not (
                isinstance(principal, Mapping) and principal.get("Federated")
            ):
                continue
            subs = _sub_values(st)
            if not subs or any(not s or "*" in s for s in subs):
                yield Finding(
                    f"{key}.Statement[{i}].Condition",
                    "an OIDC-federated trust without a specific oidc:sub"
                    + (f" ({', '.join(subs)})" if subs else ""),
                    "add Condition.StringEquals.oidc:sub: "
                    "system:serviceaccount:<namespace>:<service account>",
                )


RULE = Rule(
    id="trust-oidc-sub",
    description="OIDC trust policies are scoped to one service account with oidc:sub.",
    level=Level.MANDATORY,
    defaults={},
    check=check,
    types=ROLE_TYPES,
)
