"""secret-refs: a secret reaches a container only through ``valueFrom.secretKeyRef``, never as a
literal env value (which lands in the manifest, the stack's state and ``kubectl describe``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import containers, pod_templates
from trainstack.secretnames import looks_secret


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    for pod in pod_templates(resource.props):
        for where, c in containers(pod.spec):
            for i, env in enumerate(c.get("env") or ()):
                name = str(env.get("name", ""))
                if not looks_secret(name):
                    continue
                source = env.get("valueFrom") or {}
                if "value" in env or not source.get("secretKeyRef"):
                    how = "as a literal value" if "value" in env else "not from a Secret"
                    yield Finding(
                        f"{pod.path}.{where}.env[{i}]",
                        f"{name} is set {how}",
                        "put the value in a Secret and use valueFrom.secretKeyRef",
                    )


RULE = Rule(
    id="secret-refs",
    description="Secrets reach containers only through valueFrom.secretKeyRef.",
    level=Level.MANDATORY,
    defaults={},
    check=check,
    types=("kubernetes:",),
)
