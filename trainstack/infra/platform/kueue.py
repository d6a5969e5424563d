"""A Kueue environment (any `kueue:*` key set): Kueue at a pinned version, installed the way
trainer.py installs Trainer (its CRDs from the locked folder, the controller, its RBAC, the
webhook Service and certificate Secret, the webhook configurations, the Configuration), plus its
visibility API, and the queues of queues.py: a ResourceFlavor per node pool, per team a
ClusterQueue in the environment's cohort and a LocalQueue in the team's namespace.

Each ClusterQueue: one resource group over CPU, memory and GPUs with every flavor; nominal quota
per flavor from the team's quota, `borrowingLimit`/`lendingLimit` as the environment sets them
(config_kueue.py), fair-sharing weight; preemption within the team by priority
(withinClusterQueue: LowerPriority) and of what the team lent when it wants it back
(reclaimWithinCohort: Any). Kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go:67-150,
255-345, 495-560; fairsharing_types.go:25-39; resourceflavor_types.go:60-104;
localqueue_types.go:33-37.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform import queues as q
from trainstack.infra.platform.config import PlatformConfig
from trainstack.infra.platform.config_kueue import KueueConfig
from trainstack.infra.platform.kueue_release import (
    KUBEDL_FRAMEWORKS,
    KUEUE,
    KUEUE_RELEASE,
    TRAINER_FRAMEWORKS,
    TRAINER_WEBHOOKS,
    VISIBILITY,
    configuration,
)
from trainstack.infra.platform.kueue_releaser import build_releaser
from trainstack.infra.platform.trainer import _install
from trainstack.kueue import api

COMPONENT = "trainstack:platform:Kueue"


def queue_model(cfg: PlatformConfig) -> q.QueueModel | None:
    """The environment's queues; None without Kueue."""
    k: KueueConfig | None = cfg.kueue
    if k is None:
        return None
    pools = None
    if cfg.ack is not None:
        from trainstack.infra.platform.nodepools import pool_shapes

        pools = pool_shapes(cfg.ack)
    from trainstack.spec.values import quantity

    shares = [
        q.TeamShare(
            t.name,
            t.namespace,
            quantity(t.quota.cpu).value,
            quantity(t.quota.memory).value,
            t.quota.gpu,
            k.sharing(t.name).weight,
            k.sharing(t.name).borrowing_percent,
            k.sharing(t.name).lending_percent,
        )
        for t in cfg.teams
    ]
    return replace(q.build(k.cohort, shares, pools), releaser=k.releaser_image is not None)


def flavor_spec(f: q.Flavor) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if f.node_labels:
        spec["nodeLabels"] = dict(sorted(f.node_labels.items()))
    if f.node_taints:
        spec["nodeTaints"] = [{"key": k, "value": v, "effect": e} for k, v, e in f.node_taints]
    return spec


def cluster_queue_spec(model: q.QueueModel, team: str) -> dict[str, Any]:
    t = model.teams[team]
    flavors = []
    for f in model.flavors:
        resources = []
        for r in q.RESOURCES:
            limits = t.quotas[f.name][r]
            entry: dict[str, Any] = {"name": r, "nominalQuota": q.show(r, limits.nominal)}
            if limits.borrowing is not None:
                entry["borrowingLimit"] = q.show(r, limits.borrowing)
            if limits.lending is not None:
                entry["lendingLimit"] = q.show(r, limits.lending)
            resources.append(entry)
        flavors.append({"name": f.name, "resources": resources})
    return {
        "cohortName": model.cohort,
        # Only the team's namespace may point a LocalQueue at it.
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": list(q.RESOURCES), "flavors": flavors}],
        "fairSharing": {"weight": q.show(q.CPU, t.weight)},
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
    }


class Kueue(pulumi.ComponentResource):
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition]
    controller: k8s.apps.v1.Deployment | None
    releaser: k8s.apps.v1.Deployment | None
    cluster_queues: dict[str, k8s.apiextensions.CustomResource]

    def __init__(
        self,
        name: str,
        cfg: PlatformConfig,
        model: q.QueueModel,
        namespaces: Mapping[str, k8s.core.v1.Namespace],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        image_pull: Sequence[pulumi.Resource] = (),
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        assert cfg.kueue is not None
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        trainer = cfg.trainer is not None
        frameworks = KUBEDL_FRAMEWORKS + (TRAINER_FRAMEWORKS if trainer else ())
        mutating, validating = KUEUE.mutating, KUEUE.validating
        if trainer:
            mutating = (mutating[0], mutating[1] + TRAINER_WEBHOOKS[0])
            validating = (validating[0], validating[1] + TRAINER_WEBHOOKS[1])
        ctl = replace(
            KUEUE,
            config=configuration(frameworks),
            mutating=mutating,
            validating=validating,
        )
        self.crds, self.controller, hooks, namespace = _install(
            ctl, KUEUE_RELEASE, cfg.kueue.install, child, image_pull, ()
        )
        if self.controller is not None:
            _visibility(cfg.kueue.install.namespace, child, self.controller)
        self.releaser = None
        if cfg.kueue.releaser_image is not None:
            self.releaser = build_releaser(
                cfg.kueue.install.namespace,
                cfg.kueue.releaser_image,
                pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[namespace, *image_pull])
                ),
            )
        after = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[*self.crds, *hooks])
        )
        for warning in q.oversubscribed(model):
            pulumi.log.warn(warning)
        labels = {"app.kubernetes.io/managed-by": "trainstack"}
        for f in model.flavors:
            k8s.apiextensions.CustomResource(
                f"flavor-{f.name}",
                api_version=api.API_VERSION,
                kind=api.RESOURCE_FLAVOR,
                metadata={"name": f.name, "labels": labels},
                spec=flavor_spec(f),
                opts=after,
            )
        self.cluster_queues = {}
        for team, tq in model.teams.items():
            cq = k8s.apiextensions.CustomResource(
                f"cluster-queue-{team}",
                api_version=api.API_VERSION,
                kind=api.CLUSTER_QUEUE,
                metadata={"name": tq.cluster_queue, "labels": labels},
                spec=cluster_queue_spec(model, team),
                opts=after,
            )
            self.cluster_queues[team] = cq
            k8s.apiextensions.CustomResource(
                f"local-queue-{team}",
                api_version=api.API_VERSION,
                kind=api.LOCAL_QUEUE,
                metadata={
                    "name": model.local_queue,
                    "namespace": namespaces[team].metadata.name,
                    "labels": labels,
                },
                spec={"clusterQueue": tq.cluster_queue},
                opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[cq])),
            )
        self.register_outputs({})


def _visibility(
    namespace: str, opts: pulumi.ResourceOptions, controller: k8s.apps.v1.Deployment
) -> None:
    """The pending-workloads API: the Service in front of the controller's visibility server,
    its APIService, and the rights an aggregated API server needs to authenticate callers
    (config/components/visibility/*.yaml, config/components/rbac/ at Kueue v0.19.2)."""
    labels = {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/managed-by": "trainstack"}
    service = k8s.core.v1.Service(
        "kueue-visibility-server",
        metadata={"name": VISIBILITY.service, "namespace": namespace, "labels": labels},
        spec={
            "selector": dict(KUEUE.selector),
            "ports": [{"name": "https", "port": 443, "target_port": VISIBILITY.port}],
        },
        opts=opts,
    )
    k8s.rbac.v1.RoleBinding(
        "kueue-visibility-auth-reader",
        metadata={
            "name": VISIBILITY.auth_reader_binding,
            "namespace": "kube-system",
            "labels": labels,
        },
        role_ref={
            "api_group": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "extension-apiserver-authentication-reader",
        },
        subjects=[
            {"kind": "ServiceAccount", "name": KUEUE.service_account, "namespace": namespace}
        ],
        opts=opts,
    )
    k8s.apiregistration.v1.APIService(
        "kueue-visibility-api",
        metadata={"name": VISIBILITY.api_service, "labels": labels},
        spec={
            "group": api.VISIBILITY_GROUP,
            "version": api.VISIBILITY_VERSION,
            "group_priority_minimum": 100,
            "version_priority": 100,
            # As the release ships it (apiservice_v1beta2.yaml): the server's certificate is
            # self-signed.
            "insecure_skip_tls_verify": True,
            "service": {"name": service.metadata.name, "namespace": namespace},
        },
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[controller])),
    )
