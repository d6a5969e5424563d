"""pod-shape: a team's workload holds only what the platform's pod guard admits.

The platform refuses, in every team namespace, a pod (or a Job's or KubeDL job's pod templates,
or the pods Kubeflow Trainer makes of a TrainJob or an MPI run's own TrainingRuntime)
with a volume source, toleration, priority class or host setting trainstack does not render
(infra/platform/podguard.py). This rule evaluates that same CEL, with the same evaluator the
tests hold the guard to (policy/admission.py), on each workload a plan registers: a platform
project's template override that adds a sidecar's hostPath or a toleration of the system pool is
refused by `policy check` and `deploy` with the guard's own message, not by the API server after
`pulumi up` has started replacing the job.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack import platformnames as names
from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.trainer.nodepod import is_train_job, is_training_runtime, node_pods, runtime_pods


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    props = resource.props
    namespace = (props.get("metadata") or {}).get("namespace")
    team = ctx.team_of(namespace)
    if team is None or not isinstance(namespace, str):
        return
    if is_train_job(props) or is_training_runtime(props):
        # Trainer creates the pods: each is weighed as the pod it will be.
        made = node_pods(props) if is_train_job(props) else runtime_pods(props)
        objects = [
            (path, {"apiVersion": "v1", "kind": "Pod", "metadata": props["metadata"], "spec": pod})
            for path, pod, _ in made
        ]
    else:
        objects = [("spec", dict(props))]
    for path, obj in objects:
        yield from _refused(path, obj, namespace, team, ctx)


def _refused(
    path: str, props: Mapping[str, Any], namespace: str, team: str, ctx: Context
) -> Iterator[Finding]:
    from trainstack.infra.platform.kubedl_source import KUBEDL_CRDS
    from trainstack.infra.platform.podguard import evaluated_policy, pod_rules, workloads
    from trainstack.policy.admission import Request, refusals

    group, _, version = str(props.get("apiVersion", "")).rpartition("/")
    plural = str(props.get("kind", "")).lower() + "s"
    loads = [w for w in workloads(tuple(KUBEDL_CRDS)) if (w.group, w.plural) == (group, plural)]
    if not loads:
        return
    # A platform that exports no cap leaves the priority to the priority-cap rule.
    cap = int(ctx.team_max_priority.get(team, max(names.PRIORITIES)))
    rules = pod_rules(namespace, cap, ctx.host_path_volumes)
    policy = {
        **evaluated_policy(rules, loads),
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": ["CREATE"],
                    "resources": [plural],
                }
            ]
        },
    }
    request = Request(
        operation="CREATE",
        object=props,
        namespace=namespace,
        resource={"group": group, "version": version, "resource": plural},
    )
    for message in refusals({"pod-guard": policy}, request):
        yield Finding(
            path,
            message,
            "render what the platform admits: a template override's sidecars, volumes and "
            "tolerations must be ones trainstack renders (docs/tenancy.md)",
        )


RULE = Rule(
    id="pod-shape",
    description="A team's workloads hold only what the platform's pod admission policy admits.",
    level=Level.MANDATORY,
    defaults={},
    check=check,
    types=("kubernetes:",),
)
