"""no-host-access: no privileged containers, host network/PID/IPC or hostPath volumes, except on
a single-user local cluster whose platform set ``trainstack:hostPathVolumes`` — the same setting
that decides its team namespaces' Pod Security level (infra/platform/podsecurity.py), so the rule
and the cluster's admission agree."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import containers, pod_templates


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if ctx.host_path_volumes and config.get("allowOnLocal", True):
        return
    for pod in pod_templates(resource.props):
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.spec.get(key):
                yield Finding(
                    f"{pod.path}.{key}",
                    f"{key} is true",
                    f"remove {key}: pods share the node only on local clusters",
                )
        for i, vol in enumerate(pod.spec.get("volumes") or ()):
            if isinstance(vol, Mapping) and vol.get("hostPath"):
                path = (vol.get("hostPath") or {}).get("path", "")
                yield Finding(
                    f"{pod.path}.volumes[{i}].hostPath",
                    f"hostPath {path!r}",
                    "bind data through oss://, nas:// or pvc:// instead of a node path",
                )
        for where, c in containers(pod.spec):
            sc = c.get("securityContext") or {}
            if sc.get("privileged"):
                yield Finding(
                    f"{pod.path}.{where}.securityContext.privileged",
                    "a privileged container",
                    "drop privileged: true",
                )


RULE = Rule(
    id="no-host-access",
    description="No privileged containers, host network/PID/IPC or hostPath volumes outside "
    "local clusters.",
    level=Level.MANDATORY,
    defaults={"allowOnLocal": True},
    check=check,
    types=("kubernetes:",),
)
