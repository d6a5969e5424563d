"""The platform program: checked config in, resources and stack outputs out.

``build`` creates the platform as a tree of components — network, cluster, pools, storage,
registry, KubeDL, tenancy (ack mode; kubeconfig mode has the last three and storage) — behind two
explicit providers, and returns the stack outputs (the contract run stacks read through a
StackReference). Every component carries the one protection transformation
(``protection.py``). ``main`` is what ``pulumi up`` runs via ``infra/__main__.py``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.errors import ConfigError
from trainstack.infra.configread import raw_stack_config
from trainstack.infra.platform.config import ACR_ENTERPRISE, PlatformConfig, load
from trainstack.infra.platform.config_ack import BUCKET_PURPOSES, team_registry_namespace
from trainstack.infra.platform.kubedl import KubeDL
from trainstack.infra.platform.kueue import queue_model as kueue_queue_model
from trainstack.infra.platform.osspolicy import policy_json, team_policy
from trainstack.infra.platform.podpolicy import PodGuards
from trainstack.infra.platform.protection import component_opts
from trainstack.infra.platform.pullsecret import registry_password
from trainstack.infra.platform.storage import Storage
from trainstack.infra.platform.storageclasses import oss_internal_endpoint
from trainstack.infra.platform.teamaccess import TeamAccess, team_kubeconfigs
from trainstack.infra.platform.tenancy import Tenancy, container_defaults
from trainstack.infra.platform.volumeguard import GuardShape, TeamVolumes
from trainstack.render.options import RenderOptions

if TYPE_CHECKING:
    from trainstack.infra.platform.config_ack import AckConfig


def load_stack_config(*, offline: bool = False, root: Path | None = None) -> PlatformConfig:
    """The running stack's config, checked (raises ``ConfigError``).

    ``offline`` is for ``trainstack plan`` only: set-up steps still to do become
    ``PlatformConfig.pending`` instead of errors.
    """
    values, secret_keys = raw_stack_config()
    stack = pulumi.get_stack()
    return load(
        values,
        stack=stack,
        source=f"Pulumi.{stack}.yaml",
        secret_keys=secret_keys,
        root=root,
        offline=offline,
    )


def team_volumes(
    cfg: PlatformConfig, storage: Storage, oss_secrets: dict[str, str], oss_endpoint: str | None
) -> dict[str, tuple[GuardShape, pulumi.Output[TeamVolumes]]]:
    """Per team, what its PVs may point at (volumeguard.py): on ack the platform's buckets, NAS
    and the team's RAM role; in kubeconfig mode the buckets trainstack:ossBuckets names (else any:
    the platform owns none) and any NAS server, with the team's own AccessKey Secret. Either way
    the OSS endpoint runs render with."""
    # A platform with no endpoint of its own leaves runs at the renderer's default
    # (infra/run/options.render_options).
    endpoint = oss_endpoint or RenderOptions().oss_endpoint
    out: dict[str, tuple[GuardShape, pulumi.Output[TeamVolumes]]] = {}
    for team in cfg.teams:
        shape = GuardShape.of(
            team.name,
            team.namespace,
            cfg.ack is not None,
            oss_secrets.get(team.name),
            named_buckets=bool(cfg.oss_buckets),
        )
        if cfg.ack is None:
            named = tuple(sorted(cfg.oss_buckets)) or None
            values = TeamVolumes(shape, named, None, None, endpoint)
            out[team.name] = (shape, pulumi.Output.from_input(values))
            continue
        buckets = tuple(sorted(cfg.ack.bucket(p) for p in BUCKET_PURPOSES))

        def typed(
            values: list[Any], s: GuardShape = shape, b: tuple[str, ...] = buckets
        ) -> TeamVolumes:
            nas, role = values
            return TeamVolumes(s, b, (str(nas),), str(role), endpoint)

        out[team.name] = (
            shape,
            pulumi.Output.all(storage.nas_server, storage.team_roles[team.name]).apply(typed),
        )
    return out


@dataclass(frozen=True)
class _Cluster:
    """What either mode hands the rest of the program: the cluster's provider, the tenancy and
    storage on it, how run stacks reach it and mount OSS, and the mode's own outputs."""

    provider: k8s.Provider
    tenancy: Tenancy
    storage: Storage
    kubeconfig: pulumi.Input[str] | None
    context: str | None
    oss_auth: dict[str, Any]
    oss_endpoint: str | None
    outputs: dict[str, Any]
    # What must exist before a pod on the cluster can pull the platform's images.
    image_pull: tuple[pulumi.Resource, ...] = ()


def _ack_cluster(cfg: PlatformConfig, ack: AckConfig, password: pulumi.Input[str]) -> _Cluster:
    """ack: the network, cluster, pools and registry in Alibaba Cloud, then what goes on it."""
    # Alibaba Cloud's SDK and what builds with it, imported for ack only: a kubeconfig
    # environment's plan never loads them.
    import pulumi_alicloud as alicloud

    from trainstack.infra.platform.cluster import Cluster
    from trainstack.infra.platform.network import Network
    from trainstack.infra.platform.nodepools import NodePools, pool_shapes
    from trainstack.infra.platform.registry import Registry

    # An explicit provider pins the region from checked config, whatever the ambient
    # ALICLOUD_REGION or alicloud:region say.
    cloud = alicloud.Provider("alicloud", region=ack.region)
    net = Network("network", ack, cloud, component_opts())
    cluster = Cluster("cluster", ack, net, cloud, component_opts())
    pools = NodePools("pools", ack, cluster.resource.id, net.vswitch_ids, cloud, component_opts())
    registry_namespace: pulumi.Input[str] = ""
    registry_outputs: dict[str, Any] = {}
    image_pull: list[pulumi.Resource] = []
    if cfg.registry.kind == ACR_ENTERPRISE:
        registry = Registry(
            "registry",
            ack,
            net,
            password,
            cloud,
            component_opts(),
            cluster_id=cluster.resource.id,
            teams=[t.name for t in cfg.teams],
            pulling_namespaces=[*(t.namespace for t in cfg.teams), cfg.kubedl.namespace],
        )
        registry_namespace = registry.namespace
        image_pull.append(registry.credential_helper)
        registry_outputs = {
            names.OUT_TEAM_REGISTRY_NAMESPACES: {
                t.name: team_registry_namespace(ack.registry_namespace, t.name) for t in cfg.teams
            },
            names.OUT_TEAM_PUSH_POLICIES: registry.team_push_policies,
        }
    # Nodes, the deployer's RBAC rights and the API allow-list's binding, before anything is
    # created on the cluster.
    provider = k8s.Provider(
        "k8s",
        kubeconfig=cluster.kubeconfig,
        opts=pulumi.ResourceOptions(depends_on=[*cluster.ready, pools]),
    )
    tenancy = Tenancy("tenancy", cfg, password, provider, component_opts())
    storage = Storage(
        "storage",
        k8s_provider=provider,
        ack=ack,
        net=net,
        cluster=cluster.resource,
        cloud_provider=cloud,
        teams=[t.name for t in cfg.teams],
        opts=component_opts(),
    )
    assert storage.jobs_role is not None
    outputs: dict[str, Any] = {}
    if cluster.api_acl is not None:
        # The API server's CLB id is slb_id ("The ID of APIServer load balancer",
        # cs/managed_kubernetes.py); slb_intranet is the internal endpoint's IP address (the
        # provider parses it out of the cluster's MasterURL: aliyun/terraform-provider-alicloud
        # alicloud/resource_alicloud_cs_kubernetes.go), which no SLB API takes as an id.
        outputs |= {"apiAcl": cluster.api_acl, "apiLoadBalancer": cluster.resource.slb_id}
    outputs |= {
        "region": ack.region,
        "buckets": storage.buckets,
        "nasServer": storage.nas_server,
        "registryNamespace": registry_namespace,
        **registry_outputs,
        names.OUT_JOBS_ROLE: storage.jobs_role,
        names.OUT_NODE_POOLS: pool_shapes(ack),
    }
    return _Cluster(
        provider,
        tenancy,
        storage,
        cluster.kubeconfig,
        None,
        # One OSS scheme per mode, exported so run stacks render volumes that match it: ack
        # mounts through RRSA (no credential on nodes or in a Secret); static PVs with their
        # team's role (iam.py, volumeguard.py), the StorageClass with the jobs role.
        {
            "type": names.OSS_AUTH_RRSA,
            "roleName": storage.jobs_role,
            "teamRoles": storage.team_roles,
        },
        oss_internal_endpoint(ack.region),
        outputs,
        tuple(image_pull),
    )


def _existing_cluster(cfg: PlatformConfig, password: pulumi.Input[str]) -> _Cluster:
    """kubeconfig mode: a cluster reached by kubeconfig, and what goes on it."""
    access = cfg.cluster
    assert access is not None
    kubeconfig = access.kubeconfig  # None: the ambient ~/.kube/config or $KUBECONFIG
    provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=access.context)
    tenancy = Tenancy("tenancy", cfg, password, provider, component_opts())
    storage = Storage(
        "storage",
        k8s_provider=provider,
        access=access,
        namespaces=tenancy.namespaces,
        opts=component_opts(),
    )
    # kubeconfig mode: the AccessKey Secret of each team that has one (the same name in each of
    # their namespaces), or no OSS at all.
    oss_auth: dict[str, Any] = (
        {
            "type": names.OSS_AUTH_SECRET,
            "secretName": names.OSS_SECRET_NAME,
            "teams": sorted(tenancy.oss_secrets),
        }
        if tenancy.oss_secrets
        else {"type": names.OSS_AUTH_NONE}
    )
    outputs: dict[str, Any] = {}
    if cfg.oss_buckets:
        # Not secret: what the admin attaches to each team's RAM user (docs/platform.md).
        outputs[names.OUT_TEAM_OSS_POLICIES] = {
            t.name: policy_json(team_policy(cfg.oss_buckets, t.name)) for t in cfg.teams
        }
    return _Cluster(
        provider,
        tenancy,
        storage,
        kubeconfig,
        access.context,
        oss_auth,
        access.oss_endpoint,
        outputs,
    )


def build(cfg: PlatformConfig) -> dict[str, Any]:
    password = registry_password(cfg.offline)
    base = (
        _ack_cluster(cfg, cfg.ack, password)
        if cfg.ack is not None
        else _existing_cluster(cfg, password)
    )
    provider, tenancy, storage = base.provider, base.tenancy, base.storage
    kubeconfig, context = base.kubeconfig, base.context
    oss_auth, oss_endpoint = base.oss_auth, base.oss_endpoint
    outputs: dict[str, Any] = {"mode": cfg.mode, **base.outputs}
    kubedl = KubeDL(
        "kubedl",
        cfg.kubedl,
        provider,
        component_opts(),
        registry=cfg.registry,
        registry_password=password,
        image_pull=base.image_pull,
    )
    if cfg.trainer is not None:
        # A Trainer environment: JobSet, Trainer and trainstack's runtimes beside KubeDL.
        from trainstack.infra.platform.trainer import Trainer

        Trainer("trainer", cfg.trainer, provider, component_opts(), image_pull=base.image_pull)
    queue_model = kueue_queue_model(cfg)
    if queue_model is not None:
        # Job-level queues: Kueue, a flavor per pool, a ClusterQueue and LocalQueue per team.
        from trainstack.infra.platform.kueue import Kueue

        Kueue(
            "kueue",
            cfg,
            queue_model,
            tenancy.namespaces,
            provider,
            component_opts(),
            image_pull=base.image_pull,
        )
        outputs[names.OUT_KUEUE_QUEUES] = queue_model.to_output()
    # Run stacks get a team's own credentials instead of the admin kubeconfig (teamaccess.py).
    team_access = TeamAccess(
        "team-access",
        tenancy.namespaces,
        cfg.kubedl.workloads,
        provider,
        component_opts(),
        trainjobs=cfg.trainer is not None,
        queues=queue_model is not None,
        team_volumes=team_volumes(cfg, storage, tenancy.oss_secrets, oss_endpoint),
        legacy_tokens=cfg.legacy_team_tokens,
    )
    PodGuards(
        "pod-guards",
        cfg.teams,
        cfg.kubedl.workloads,
        cfg.cluster is not None and cfg.cluster.host_path_volumes,
        provider,
        component_opts(),
        trainjobs=cfg.trainer is not None,
    )
    team_namespaces = {team: ns.metadata.name for team, ns in tenancy.namespaces.items()}

    outputs |= {
        # Always a secret, even when empty or a path: run stacks treat it as a credential.
        names.OUT_KUBECONFIG: pulumi.Output.secret(kubeconfig or ""),
        names.OUT_KUBE_CONTEXT: context or "",
        names.OUT_NAMESPACES: team_namespaces,
        # `scope publish` mints each team's expiring token for this long (deploy/scopetoken.py).
        names.OUT_TEAM_TOKEN_HOURS: cfg.team_token_hours,
        names.OUT_GC_AFTER_DAYS: cfg.gc_after_days,
        names.OUT_OPERATOR: cfg.operator.value,
        names.OUT_STORAGE_CLASSES: storage.storage_classes,
        names.OUT_REGISTRY: cfg.registry.server,
        names.OUT_PULL_SECRET: tenancy.pull_secret,
        names.OUT_KUBEDL_VERSION: cfg.kubedl.version,
        "kubedlWorkloads": list(cfg.kubedl.workloads),
        "kubedlController": kubedl.controller.metadata.name if kubedl.controller else "",
        names.OUT_PRIORITY_CLASSES: [pc.metadata.name for pc in tenancy.priority_classes],
        names.OUT_TEAM_MAX_PRIORITY: {t.name: t.max_priority for t in cfg.teams},
        names.OUT_TEAM_DEFAULTS: {t.name: container_defaults(t) for t in cfg.teams},
        names.OUT_GANG_SCHEDULER: cfg.kubedl.gang_scheduler or "",
        names.OUT_OSS_AUTH: oss_auth,
        names.OUT_HOST_PATH_VOLUMES: cfg.cluster is not None and cfg.cluster.host_path_volumes,
        names.OUT_OSS_ENDPOINT: oss_endpoint or "",
        names.OUT_ARTIFACT_STORE: storage.artifact_store,
    }
    if cfg.trainer is not None:
        outputs[names.OUT_TRAINER_VERSION] = cfg.trainer.trainer.version
        outputs[names.OUT_JOBSET_VERSION] = cfg.trainer.jobset.version
    if cfg.legacy_team_tokens:
        # Secret: {namespace: kubeconfig} logging in as the team's ServiceAccount with its
        # non-expiring token; gone with trainstack:legacyTeamTokens: false.
        outputs[names.OUT_TEAM_KUBECONFIGS] = team_kubeconfigs(
            team_namespaces, team_access.tokens, kubeconfig, context
        )
    return outputs


def main() -> None:
    try:
        cfg = load_stack_config()
    except ConfigError as err:
        # RunError ends the program with the message alone, not a Python traceback.
        raise pulumi.RunError(err.render()) from None
    for step in cfg.pending:  # only what `pulumi up` may go ahead without (kubedl:image)
        pulumi.log.warn(step)
    from trainstack.infra.platform.cluster import ALIYUN_CLI, API_ACL_CLI_MISSING

    if cfg.ack is not None and cfg.ack.api_public and shutil.which(ALIYUN_CLI) is None:
        # The API allow-list is bound by the aliyun CLI (cluster.bind_api_acl): without it the
        # public endpoint would stay open to the internet after `up`.
        message = API_ACL_CLI_MISSING
        if not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(message)
        pulumi.log.warn(message)
    for key, value in build(cfg).items():
        pulumi.export(key, value)
