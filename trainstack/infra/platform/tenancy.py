"""Both modes: one namespace per team — quota, container defaults, priority cap, pull secret,
the team's own OSS Secret — and the run PriorityClasses.

- ResourceQuota ``trainstack-quota``: the team's share of CPU, memory, GPUs (and pods), of
  storage and claims, ephemeral storage, load balancers and node ports (0 by default), and counts
  of the objects a run and KubeDL create (config.py's defaults).
- LimitRange ``trainstack-defaults``: requests and limits for containers that set none. A quota
  on ``requests.*`` refuses every pod that does not state them; with the defaults they are
  admitted, and a container without limits is bounded rather than free to take its whole node.
- Pod Security labels (``podsecurity.py``): ``baseline`` enforced, ``restricted`` audited and
  warned, so a team credential cannot run privileged or hostPath pods.
- The image pull secret, only where the registry is one the platform does not create (its
  password should then be a pull-only robot's: docs/tenancy.md); the platform's ACR needs none.
- NetworkPolicy ``trainstack-isolation`` (``netpolicy.py``): in from the namespace only; out to
  it, DNS and everything but the metadata endpoints and the pod network.
- ValidatingAdmissionPolicy ``trainstack-team-services`` (``serviceguard.py``, one for all team
  namespaces): ClusterIP Services only, no ``externalIPs``.
- ResourceQuota ``trainstack-priority-cap``: zero pods of the classes above the team's
  ``maxPriority`` and of Kubernetes' ``system-*-critical`` classes (a quota scoped by
  PriorityClass), so one team cannot preempt all the others, nor CoreDNS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform import podsecurity, queues
from trainstack.infra.platform.config import PlatformConfig
from trainstack.infra.platform.config_teams import (
    DEFAULT_KUBEDL_JOBS,
    DEFAULT_OBJECT_COUNTS,
    Team,
    kubedl_count_key,
)
from trainstack.infra.platform.netpolicy import build_isolation
from trainstack.infra.platform.osssecret import build_oss_secrets
from trainstack.infra.platform.pullsecret import build_pull_secrets
from trainstack.infra.platform.queues import QueueModel
from trainstack.infra.platform.serviceguard import build_service_guard
from trainstack.platformnames import TEAM_NAMESPACE_LABEL

COMPONENT = "trainstack:platform:Tenancy"
TEAM_LABEL = TEAM_NAMESPACE_LABEL


def container_defaults(team: Team) -> dict[str, str]:
    """The ``teamDefaults`` output: what the team's LimitRange gives a container that states no
    requests or limits, for the fit rules to count such a container as admitted."""
    d = team.defaults
    return {
        "cpu": d.cpu,
        "memory": d.memory,
        "limitCpu": d.limit_cpu,
        "limitMemory": d.limit_memory,
        "ephemeralStorage": d.ephemeral_storage,
        "limitEphemeralStorage": d.limit_ephemeral_storage,
    }


def quota_hard(
    team: Team, workloads: Sequence[str], ceiling: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The team's ``trainstack-quota``: compute, storage, Service types and object counts.
    ``ceiling`` (a Kueue environment): CPU, memory and GPUs at the most Kueue may admit to the
    team, its own quota plus what it may borrow (queues.py)."""
    q = team.quota
    hard = {
        "requests.cpu": q.cpu,
        "requests.memory": q.memory,
        "requests.nvidia.com/gpu": str(q.gpu),
        "requests.storage": q.storage,
        "persistentvolumeclaims": str(q.claims),
        "services.loadbalancers": str(q.load_balancers),
        "services.nodeports": str(q.node_ports),
        "requests.ephemeral-storage": q.ephemeral_storage,
        "limits.ephemeral-storage": q.limit_ephemeral_storage,
    }
    if ceiling is not None:
        hard |= {f"requests.{r}": v for r, v in ceiling.items()}
    if q.pods is not None:
        hard["pods"] = str(q.pods)
    counts = {
        **DEFAULT_OBJECT_COUNTS,
        **{kubedl_count_key(kind): DEFAULT_KUBEDL_JOBS for kind in workloads},
        **dict(q.objects),
    }
    hard |= {f"count/{name}": str(n) for name, n in counts.items()}
    return hard


def forbidden_priority_classes(team: Team) -> list[str]:
    """The classes the team's cap quota holds at 0 pods: the run priorities above its
    ``maxPriority`` and, for every team, Kubernetes' own system classes."""
    above = [names.priority_class_name(p) for p in names.PRIORITIES if p > team.max_priority]
    return [*above, *names.SYSTEM_PRIORITY_CLASSES]


class Tenancy(pulumi.ComponentResource):
    namespaces: dict[str, k8s.core.v1.Namespace]
    priority_classes: list[k8s.scheduling.v1.PriorityClass]
    pull_secret: str
    oss_secrets: dict[str, str]  # team -> its OSS AccessKey Secret; a team without one: absent

    def __init__(
        self,
        name: str,
        cfg: PlatformConfig,
        registry_password: pulumi.Input[str],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        level = podsecurity.team_level(cfg.cluster is not None and cfg.cluster.host_path_volumes)
        from trainstack.infra.platform.kueue import queue_model

        model = queue_model(cfg)
        self.namespaces = {
            team.name: _team(team, level, cfg.kubedl.workloads, child, _ceiling(model, team.name))
            for team in cfg.teams
        }
        # ack: Terway's pod vSwitches; kubeconfig mode: the cluster's pod CIDR is not ours to know
        pod_network = cfg.ack.pod_vswitch_cidrs if cfg.ack is not None else ()
        for team in cfg.teams:
            ns = self.namespaces[team.name]
            build_isolation(
                team.name, ns.metadata.name, {TEAM_LABEL: team.name}, pod_network, child
            )
        self.priority_classes = build_priority_classes(child)
        build_service_guard({"app.kubernetes.io/managed-by": "trainstack"}, child)
        # "": pods pull without one (the platform's ACR: registry.py), and render none.
        self.pull_secret = (
            ""
            if cfg.registry.pulls_without_secret
            else build_pull_secrets(cfg.registry, registry_password, self.namespaces, child)
        )
        self.oss_secrets = (
            build_oss_secrets(self.namespaces, cfg.oss_keys, child) if cfg.oss_keys else {}
        )
        self.register_outputs({})


def _ceiling(model: QueueModel | None, team: str) -> dict[str, str] | None:
    if model is None:
        return None
    return {r: queues.show(r, model.ceiling(team, r)) for r in queues.RESOURCES}


def _team(
    team: Team,
    level: podsecurity.Level,
    workloads: Sequence[str],
    opts: pulumi.ResourceOptions,
    ceiling: Mapping[str, str] | None = None,
) -> k8s.core.v1.Namespace:
    ns = k8s.core.v1.Namespace(
        f"ns-{team.name}",
        metadata={
            "name": team.namespace,
            "labels": {
                TEAM_LABEL: team.name,
                "app.kubernetes.io/managed-by": "trainstack",
                **podsecurity.labels(level),
            },
        },
        opts=opts,
    )
    labels = {TEAM_LABEL: team.name}
    k8s.core.v1.ResourceQuota(
        f"quota-{team.name}",
        metadata={"name": "trainstack-quota", "namespace": ns.metadata.name, "labels": labels},
        spec={"hard": quota_hard(team, workloads, ceiling)},
        opts=opts,
    )
    k8s.core.v1.LimitRange(
        f"limits-{team.name}",
        metadata={"name": "trainstack-defaults", "namespace": ns.metadata.name, "labels": labels},
        spec={
            "limits": [
                {
                    "type": "Container",
                    "default_request": {
                        "cpu": team.defaults.cpu,
                        "memory": team.defaults.memory,
                        "ephemeral-storage": team.defaults.ephemeral_storage,
                    },
                    "default": {
                        "cpu": team.defaults.limit_cpu,
                        "memory": team.defaults.limit_memory,
                        "ephemeral-storage": team.defaults.limit_ephemeral_storage,
                    },
                }
            ]
        },
        opts=opts,
    )
    k8s.core.v1.ResourceQuota(
        f"priority-cap-{team.name}",
        metadata={
            "name": "trainstack-priority-cap",
            "namespace": ns.metadata.name,
            "labels": labels,
        },
        spec={
            "hard": {"pods": "0"},
            "scope_selector": {
                "match_expressions": [
                    {
                        "scope_name": "PriorityClass",
                        "operator": "In",
                        "values": forbidden_priority_classes(team),
                    }
                ]
            },
        },
        opts=opts,
    )
    return ns


def build_priority_classes(opts: pulumi.ResourceOptions) -> list[k8s.scheduling.v1.PriorityClass]:
    """``trainstack-priority-1`` .. ``-9``: the names the renderer writes into every job."""
    return [
        k8s.scheduling.v1.PriorityClass(
            f"priority-{p}",
            metadata={"name": names.priority_class_name(p)},
            value=names.priority_class_value(p),
            global_default=False,
            preemption_policy="PreemptLowerPriority",
            description=f"trainstack run priority {p} (1 lowest, 9 highest)",
            opts=opts,
        )
        for p in names.PRIORITIES
    ]
