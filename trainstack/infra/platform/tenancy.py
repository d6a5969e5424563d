"""Both modes: one namespace per team — quota, container defaults, priority cap, pull secret,
OSS Secret — and the run PriorityClasses.

- ResourceQuota ``trainstack-quota``: the team's share of CPU, memory, GPUs (and pods).
- LimitRange ``trainstack-defaults``: requests and limits for containers that set none. A quota
  on ``requests.*`` refuses every pod that does not state them; with the defaults they are
  admitted, and a container without limits is bounded rather than free to take its whole node.
- Pod Security labels (``podsecurity.py``): ``baseline`` enforced, ``restricted`` audited and
  warned, so a team credential cannot run privileged or hostPath pods.
- NetworkPolicy ``trainstack-isolation`` (``netpolicy.py``): in from the namespace only; out to
  it, DNS and everything but the metadata endpoints and the pod network.
- ValidatingAdmissionPolicy ``trainstack-team-services`` (``serviceguard.py``, one for all team
  namespaces): ClusterIP Services only, no ``externalIPs``.
- ResourceQuota ``trainstack-priority-cap``: zero pods of the classes above the team's
  ``maxPriority`` and of Kubernetes' ``system-*-critical`` classes (a quota scoped by
  PriorityClass), so one team cannot preempt all the others, nor CoreDNS.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.infra.platform import podsecurity
from trainstack.infra.platform.config import PlatformConfig, Team
from trainstack.infra.platform.netpolicy import build_isolation
from trainstack.infra.platform.osssecret import build_oss_secrets
from trainstack.infra.platform.protection import TEAM_NAMESPACE_LABEL
from trainstack.infra.platform.pullsecret import build_pull_secrets
from trainstack.infra.platform.serviceguard import build_service_guard

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
    }


def forbidden_priority_classes(team: Team) -> list[str]:
    """The classes the team's cap quota holds at 0 pods: the run priorities above its
    ``maxPriority`` and, for every team, Kubernetes' own system classes."""
    above = [names.priority_class_name(p) for p in names.PRIORITIES if p > team.max_priority]
    return [*above, *names.SYSTEM_PRIORITY_CLASSES]


class Tenancy(pulumi.ComponentResource):
    namespaces: dict[str, k8s.core.v1.Namespace]
    priority_classes: list[k8s.scheduling.v1.PriorityClass]
    pull_secret: str
    oss_secret: str | None

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
        self.namespaces = {team.name: _team(team, level, child) for team in cfg.teams}
        # ack: Terway's pod vSwitches; kubeconfig mode: the cluster's pod CIDR is not ours to know
        pod_network = cfg.ack.pod_vswitch_cidrs if cfg.ack is not None else ()
        for team in cfg.teams:
            ns = self.namespaces[team.name]
            build_isolation(
                team.name, ns.metadata.name, {TEAM_LABEL: team.name}, pod_network, child
            )
        self.priority_classes = build_priority_classes(child)
        build_service_guard({"app.kubernetes.io/managed-by": "trainstack"}, child)
        self.pull_secret = build_pull_secrets(
            cfg.registry, registry_password, self.namespaces, child
        )
        self.oss_secret = build_oss_secrets(self.namespaces, child) if cfg.oss_access_key else None
        self.register_outputs({})


def _team(
    team: Team, level: podsecurity.Level, opts: pulumi.ResourceOptions
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
    hard = {
        "requests.cpu": team.quota.cpu,
        "requests.memory": team.quota.memory,
        "requests.nvidia.com/gpu": str(team.quota.gpu),
    }
    if team.quota.pods is not None:
        hard["pods"] = str(team.quota.pods)
    k8s.core.v1.ResourceQuota(
        f"quota-{team.name}",
        metadata={"name": "trainstack-quota", "namespace": ns.metadata.name, "labels": labels},
        spec={"hard": hard},
        opts=opts,
    )
    k8s.core.v1.LimitRange(
        f"limits-{team.name}",
        metadata={"name": "trainstack-defaults", "namespace": ns.metadata.name, "labels": labels},
        spec={
            "limits": [
                {
                    "type": "Container",
                    "default_request": {"cpu": team.defaults.cpu, "memory": team.defaults.memory},
                    "default": {
                        "cpu": team.defaults.limit_cpu,
                        "memory": team.defaults.limit_memory,
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
