"""queue-recreate: on a Kueue environment that does not run the finalizer releaser yet (ack,
until `kueue:releaserImage` is set), a KubeDL job whose replicas KubeDL recreates after a
retryable exit (`restartPolicy: ExitCode`, what `faultTolerance` renders) is noted before deploy.

KubeDL deletes the failed pod and creates its replacement under the same name, while Kueue keeps
a failed pod of a plain-pod group (its finalizer) until a replacement has joined: without the
releaser (trainstack.kueue.releaser) the replacement can never be created, and the job waits
until it is destroyed (docs/queues.md, "A replica that fails"; trainstack.kueue.podgroup models
it from both sources). Advisory: the job runs as long as nothing fails, and the user decides
whether to run it here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.kubedl import KINDS
from trainstack.kubedl.restart import EXIT_CODE
from trainstack.kueue.api import POD_GROUP_NAME_LABEL
from trainstack.policy.model import Context, Finding, Level, Resource, Rule

# KubeDL's restart policy that recreates a pod on a retryable exit code (KubeDL v0.5.0
# pkg/job_controller/failover.go:43-53).
RECREATES = EXIT_CODE


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    if ctx.queues is not None and ctx.queues.get("releaser") is True:
        return
    props = resource.props
    kind = next((k for k in KINDS.values() if k.kind == props.get("kind")), None)
    spec = props.get("spec")
    if kind is None or kind.replicas_key is None or not isinstance(spec, Mapping):
        return
    replicas = spec.get(kind.replicas_key)
    for role, replica in sorted((replicas or {}).items()) if isinstance(replicas, Mapping) else ():
        if not isinstance(replica, Mapping) or replica.get("restartPolicy") != RECREATES:
            continue
        template = replica.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if POD_GROUP_NAME_LABEL not in labels:
            continue  # not queued: KubeDL's recreation works as ever
        yield Finding(
            f"spec.{kind.replicas_key}.{role}.restartPolicy",
            f"{role} replicas are recreated after a retryable exit ({RECREATES}), and this "
            "queued environment runs no finalizer releaser yet: a recreated replica never "
            "rejoins its Kueue pod group, and the job would wait until destroyed",
            "set kueue:releaserImage for the environment (docs/queues.md, 'A replica that "
            "fails'), or destroy and deploy again after a failure",
        )


RULE = Rule(
    id="queue-recreate",
    description="On a Kueue environment without the finalizer releaser, a KubeDL job whose "
    "replicas are recreated after a failure is noted: the recreated replica never rejoins its "
    "pod group.",
    level=Level.ADVISORY,
    defaults={},
    check=check,
    types=("kubernetes:",),
)
