"""The ack mode's config: region, network, node pools, storage and registry on Alibaba Cloud."""

from __future__ import annotations

import ipaddress
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from trainstack import k8snames
from trainstack.errors import ConfigError
from trainstack.infra.configread import REQUIRED, Pending, Section
from trainstack.infra.logplace import DEFAULT_RETENTION_DAYS

# teamaccess.py's volume guards are ValidatingAdmissionPolicies: 1.30 or later.
from trainstack.platformnames import CAPACITY_LABEL, GPU_RESOURCE, MIN_KUBERNETES_MINOR

# OpenSSH key types ECS ImportKeyPair accepts (rsa, dsa, ecdsa; see load_ack)
NODE_KEY_TYPES = (
    "ssh-rsa ",
    "ssh-dss ",
    "ecdsa-sha2-nistp256 ",
    "ecdsa-sha2-nistp384 ",
    "ecdsa-sha2-nistp521 ",
)

# The PAI Designer custom components documentation lists these as the regions that support
# custom components.
REGIONS = ("cn-beijing", "cn-shanghai", "cn-hangzhou", "cn-shenzhen")
GPU_TAINT = (GPU_RESOURCE, "present", "NoSchedule")
# Only runs that ask for preemptible capacity (the renderer adds the toleration) land on spot.
SPOT_TAINT = (CAPACITY_LABEL, "spot", "NoSchedule")
# The system pool's nodes are for cluster add-ons only: a training pod there would starve CoreDNS
# and the CSI plugins. CriticalAddonsOnly is the taint Kubernetes' own add-ons tolerate (CoreDNS's
# and metrics-server's manifests carry `{key: CriticalAddonsOnly, operator: Exists}`); DaemonSets
# such as the CSI node plugin tolerate every taint. No rendered job tolerates it, and KubeDL's
# controller does (kubedl.py), since it is platform software that must run somewhere.
SYSTEM_TAINT = ("CriticalAddonsOnly", "true", "NoSchedule")
# "artifacts" is the artifact store runs write their outputs to (the artifactStore output).
BUCKET_PURPOSES = ("data", "models", "checkpoints", "code", "artifacts")
NAS_STORAGE_TYPES = ("Performance", "Capacity")
# How `pulumi up` reaches the API server it creates (docs/platform.md, "The API endpoint"):
# "public" puts an EIP on the API server's load balancer and allows only apiAllowedCidrs;
# "private" keeps it inside the VPC, so `pulumi up` must run from there (a CI runner in the VPC).
API_ENDPOINTS = ("public", "private")
ACR_EDITIONS = ("Basic", "Standard", "Advanced")

ACK_KEYS = (
    "region",
    "zones",
    "vpcCidr",
    "vswitchCidrs",
    "podVswitchCidrs",
    "serviceCidr",
    "clusterName",
    "clusterSpec",
    "kubernetesVersion",
    "apiEndpoint",
    "apiAllowedCidrs",
    "registryAllowedCidrs",
    "deployer",
    "systemPool",
    "cpuPool",
    "gpuPools",
    "spotPool",
    "nodePublicKey",
    "bucketPrefix",
    "logRetentionDays",
    "nasStorageType",
    "registryType",
    "registryInstanceName",
    "registryEdition",
    "registryNamespace",
    "registryRepos",
)
_INSTANCE_TYPE = r"ecs\.[a-z0-9-]+\.[a-z0-9-]+"
_NAME = k8snames.label_pattern(32)
# The cluster name starts the key pair's name ("<cluster>-nodes"), which "must start with a
# letter" (pulumi_alicloud ecs/ecs_key_pair.py, key_pair_name), as must the NAS description built
# from it (nas/file_system.py, description).
_CLUSTER_NAME = r"[a-z]([-a-z0-9]{0,30}[a-z0-9])?"
# An ACR Enterprise namespace name "cannot start or end with a delimiter" (_ - .)
# (pulumi_alicloud cs/registry_enterprise_namespace.py, name).
_ACR_NAMESPACE = r"[a-z0-9][a-z0-9_.-]{0,28}[a-z0-9]"


def team_registry_namespace(base: str, team: str) -> str:
    """The ACR namespace a team pushes its own images to (registry.py)."""
    return f"{base}-{team}"


def check_team_registry_namespaces(sec: Section, ack: AckConfig, teams: Sequence[str]) -> None:
    """Every team's ACR namespace is a name ACR takes."""
    for team in teams:
        name = team_registry_namespace(ack.registry_namespace, team)
        if re.fullmatch(_ACR_NAMESPACE, name) is None:
            raise sec.error(
                "registryNamespace",
                f"a namespace short enough that <namespace>-<team> is an ACR namespace "
                f"([a-z0-9_.-], 2-30); team {team!r} makes {name!r}",
                ack.registry_namespace,
                hint="shorten trainstack:registryNamespace or the team's name",
            )


# pulumi_alicloud vpc/network.py, cidr_block: "The subnet mask must be 8 to 28 bits in length",
# and not one of these blocks or inside them.
VPC_PREFIX = (8, 28)
VPC_RESERVED = tuple(
    ipaddress.IPv4Network(b)
    for b in ("100.64.0.0/10", "224.0.0.0/4", "127.0.0.0/8", "169.254.0.0/16")
)
# pulumi_alicloud vpc/switch.py, cidr_block: "The subnet mask must be 16 to 29 bits in length".
VSWITCH_PREFIX = (16, 29)
# pulumi_alicloud slb/acl_entry_attachment.py: "The maximum number of entries per acl is 300".
MAX_ACL_ENTRIES = 300


@dataclass(frozen=True)
class PoolConfig:
    name: str
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    gpu: bool
    gpu_type: str | None = None
    spot_price_limit: str | None = None  # only for the spot pool; None there means market price
    spot: bool = False
    system_disk_size: int = 120
    fixed_size: int | None = None  # the system pool: this many nodes, never autoscaled


@dataclass(frozen=True)
class Identity:
    """A RAM user or role given cluster-admin through cs.KubernetesPermission."""

    uid: str
    ram_role: bool


@dataclass(frozen=True)
class AckConfig:
    region: str
    zones: tuple[str, ...]
    vpc_cidr: str
    vswitch_cidrs: tuple[str, ...]
    # Terway's pod vSwitches, one per zone: pods take VPC addresses from these (no pod CIDR)
    pod_vswitch_cidrs: tuple[str, ...]
    service_cidr: str
    cluster_name: str
    cluster_spec: str
    kubernetes_version: str | None
    cpu_pool: PoolConfig
    gpu_pools: tuple[PoolConfig, ...]
    spot_pool: PoolConfig | None
    bucket_prefix: str
    nas_storage_type: str
    registry_namespace: str
    registry_repos: tuple[str, ...]
    system_pool: PoolConfig
    api_public: bool
    api_allowed_cidrs: tuple[str, ...]
    # sources admitted to the ACR instance's internet endpoint; none: no internet endpoint
    # (a new Enterprise instance admits no traffic until an access mode is enabled)
    registry_allowed_cidrs: tuple[str, ...]
    deployer: Identity | None  # None only in an offline plan (pending)
    node_public_key: str | None  # None only in an offline plan (pending)
    registry_instance: str
    registry_edition: str
    # Days a run's replica logs stay in the artifact store unless it keeps them (spec.keepLogs).
    log_retention_days: int = DEFAULT_RETENTION_DAYS

    @property
    def pools(self) -> tuple[PoolConfig, ...]:
        return (
            self.system_pool,
            self.cpu_pool,
            *self.gpu_pools,
            *((self.spot_pool,) if self.spot_pool else ()),
        )

    def bucket(self, purpose: str) -> str:
        return f"{self.bucket_prefix}-{purpose}"


def load_ack(main: Section, stack: str, pending: Pending | None = None) -> AckConfig:
    """The ack keys of one stack, checked and typed, a section at a time (the order in which
    they are read is the order in which their errors are reported)."""
    region, zones, vpc, vswitches, pods, service = _network(main)
    pending = pending or Pending(False)
    system, cpu, gpus, spot = _pools(main)
    api, allowed = _api_endpoint(main, stack, pending)
    deployer = _deployer(main, stack, pending)
    public_key = _node_key(main, stack, pending)
    version = _kubernetes_version(main)
    prefix = main.string(
        "bucketPrefix",
        pattern=r"[a-z0-9][a-z0-9-]{1,49}[a-z0-9]",
        what="an OSS bucket name prefix ([a-z0-9-], 3-51 characters)",
    )
    return AckConfig(
        region=region,
        zones=zones,
        vpc_cidr=str(vpc),
        vswitch_cidrs=vswitches,
        pod_vswitch_cidrs=pods,
        service_cidr=str(service),
        cluster_name=main.string(
            "clusterName",
            f"trainstack-{stack}",
            pattern=_CLUSTER_NAME,
            what="a cluster name ([a-z0-9-], ≤ 32, starting with a letter)",
        ),
        cluster_spec=main.string(
            "clusterSpec", "ack.pro.small", choices=("ack.pro.small", "ack.standard")
        ),
        kubernetes_version=version,
        cpu_pool=cpu,
        gpu_pools=gpus,
        spot_pool=spot,
        bucket_prefix=prefix,
        nas_storage_type=main.string("nasStorageType", "Capacity", choices=NAS_STORAGE_TYPES),
        registry_namespace=main.string(
            "registryNamespace",
            pattern=_ACR_NAMESPACE,
            what="an ACR namespace ([a-z0-9_.-], 2-30, starting and ending with [a-z0-9])",
        ),
        registry_repos=main.string_list(
            "registryRepos", [], pattern=r"[a-z0-9][a-z0-9_.-]{0,63}", what="ACR repository names"
        ),
        system_pool=system,
        api_public=api == "public",
        api_allowed_cidrs=allowed,
        registry_allowed_cidrs=(
            _allow_list(
                main,
                "registryAllowedCidrs",
                "CIDR blocks allowed to push and pull over the registry's internet endpoint",
                "list the addresses images are pushed from (e.g. a CI runner's egress IP/32)",
            )
            if main.has("registryAllowedCidrs")
            else ()
        ),
        deployer=deployer,
        node_public_key=public_key,
        registry_instance=main.string(
            "registryInstanceName",
            f"trainstack-{stack}",
            pattern=r"[a-z0-9][a-z0-9-]{2,28}[a-z0-9]",
            what="an ACR instance name ([a-z0-9-], 4-30)",
        ),
        registry_edition=main.string("registryEdition", "Basic", choices=ACR_EDITIONS),
        log_retention_days=main.integer(
            "logRetentionDays", DEFAULT_RETENTION_DAYS, minimum=1, maximum=36500
        ),
    )


def _network(
    main: Section,
) -> tuple[
    str,
    tuple[str, ...],
    ipaddress.IPv4Network,
    tuple[str, ...],
    tuple[str, ...],
    ipaddress.IPv4Network,
]:
    """Region, zones and the address blocks: the VPC, per zone a node and a pod vSwitch, and
    the Services."""
    region = main.string("region", choices=REGIONS)
    zones = main.string_list(
        "zones",
        min_items=1,
        pattern=rf"{region}-[a-z0-9]+",
        what=f"zone ids in {region} (e.g. {region}-h)",
    )
    vpc = _cidr(main, "vpcCidr", "10.0.0.0/8")
    if not VPC_PREFIX[0] <= vpc.prefixlen <= VPC_PREFIX[1]:
        raise main.error(
            "vpcCidr", f"a block with a /{VPC_PREFIX[0]} to /{VPC_PREFIX[1]} mask", str(vpc)
        )
    reserved = [str(r) for r in VPC_RESERVED if vpc.overlaps(r)]
    if reserved:
        raise main.error(
            "vpcCidr",
            f"a block outside {reserved[0]} (reserved; e.g. 10.0.0.0/8, 172.16.0.0/12 or "
            "192.168.0.0/16)",
            str(vpc),
        )
    if main.has("podCidr"):
        raise ConfigError(
            f"{main.key('podCidr')}: no longer read: the cluster's CNI is Terway with "
            "NetworkPolicy (flannel enforces none), which gives pods addresses from pod "
            "vSwitches, not a pod CIDR; a cluster created with flannel cannot change its CNI, "
            "so this takes a new cluster",
            hint="remove podCidr, set trainstack:podVswitchCidrs (one block per zone, inside "
            'vpcCidr) and create a new cluster (docs/platform.md, "Network isolation")',
        )
    vswitches = _zone_blocks(main, "vswitchCidrs", zones, vpc, 1)
    pods = _zone_blocks(main, "podVswitchCidrs", zones, vpc, 101)
    for block in pods:
        net = ipaddress.IPv4Network(block)
        if any(net.overlaps(ipaddress.IPv4Network(b)) for b in vswitches):
            raise main.error("podVswitchCidrs", "blocks apart from vswitchCidrs", block)
        if sum(net.overlaps(ipaddress.IPv4Network(b)) for b in pods) > 1:
            raise main.error("podVswitchCidrs", "blocks apart from each other", block)
    service = _cidr(main, "serviceCidr", "172.21.0.0/20")
    if service.overlaps(vpc):
        raise main.error("serviceCidr", f"a block outside vpcCidr {vpc}", str(service))
    return region, zones, vpc, vswitches, pods, service


def _zone_blocks(
    main: Section, key: str, zones: tuple[str, ...], vpc: ipaddress.IPv4Network, first: int
) -> tuple[str, ...]:
    """One vSwitch block per zone, inside the VPC (default 10.<first + i>.0.0/16)."""
    default = [f"10.{first + i}.0.0/16" for i in range(len(zones))]
    blocks = main.string_list(key, default, min_items=len(zones), what="CIDR blocks, one per zone")
    # ipaddress also reads "10.1.0.0/255.255.0.0" and a bare address; the APIs take a.b.c.d/n
    # (e.g. SLB AddAccessControlListEntry: IP entries must be CIDR blocks, https://help.aliyun.com/
    # zh/slb/classic-load-balancer/developer-reference/api-slb-2014-05-15-addaccesscontrollistentry)
    # so every block is passed on as ipaddress writes it.
    blocks = tuple(str(_parse_cidr(main, key, b)) for b in blocks)
    if len(blocks) != len(zones):
        raise main.error(key, f"exactly {len(zones)} CIDR blocks (one per zone)", list(blocks))
    for block in blocks:
        net = _parse_cidr(main, key, block)
        if not VSWITCH_PREFIX[0] <= net.prefixlen <= VSWITCH_PREFIX[1]:
            raise main.error(
                key, f"blocks with a /{VSWITCH_PREFIX[0]} to /{VSWITCH_PREFIX[1]} mask", block
            )
        if not net.subnet_of(vpc):
            raise main.error(key, f"blocks inside vpcCidr {vpc}", block)
    return blocks


def _pools(
    main: Section,
) -> tuple[PoolConfig, PoolConfig, tuple[PoolConfig, ...], PoolConfig | None]:
    """The system, CPU, GPU and spot pools, with distinct names."""
    system = _system_pool(main.section("systemPool", {}))
    cpu = _pool(
        main.section("cpuPool", {}),
        "cpu",
        gpu=False,
        default_min=1,
        default_max=5,
        default_types=["ecs.g7.2xlarge"],
    )
    gpus = tuple(
        _pool(s, None, gpu=True, default_min=0, default_max=4)
        for s in main.sections("gpuPools", min_items=1)
    )
    spot = _spot_pool(main.section("spotPool")) if main.has("spotPool") else None
    pool_names = [p.name for p in (system, cpu, *gpus, *([spot] if spot else []))]
    if len(set(pool_names)) != len(pool_names):
        raise main.error("gpuPools", "pools with distinct names", pool_names)
    return system, cpu, gpus, spot


def _api_endpoint(main: Section, stack: str, pending: Pending) -> tuple[str, tuple[str, ...]]:
    """How `pulumi up` reaches the API server, and the allow-list of a public endpoint."""
    api = main.string("apiEndpoint", "private", choices=API_ENDPOINTS)
    allowed: tuple[str, ...] = ()
    cidr_how = (
        f"pulumi config set --path 'trainstack:apiAllowedCidrs[0]' <your CIDR, e.g. the "
        f"CI runner's egress IP/32> --stack {stack}"
    )
    if api == "public" and pending.offline and not main.has("apiAllowedCidrs"):
        pending.add(
            "trainstack:apiAllowedCidrs is not set (the public API endpoint admits only "
            f"listed sources): {cidr_how}"
        )
    elif api == "public":
        if not main.has("apiAllowedCidrs"):
            raise main.error(
                "apiAllowedCidrs", "the CIDR blocks allowed to reach the API server", hint=cidr_how
            )
        allowed = _allow_list(
            main,
            "apiAllowedCidrs",
            "CIDR blocks allowed to reach the API server",
            "list the addresses `pulumi up` and kubectl run from",
        )
        # Each block is one slb.AclEntryAttachment (at most MAX_ACL_ENTRIES), beside the two the
        # cluster needs (cluster.required_api_cidrs: the control plane's and the VPC's).
        if len(allowed) > MAX_ACL_ENTRIES - 2:
            raise main.error(
                "apiAllowedCidrs",
                f"at most {MAX_ACL_ENTRIES - 2} blocks (the list also holds the control plane's "
                "and the VPC's)",
                f"{len(allowed)} blocks",
            )
    elif main.has("apiAllowedCidrs"):
        raise main.error(
            "apiAllowedCidrs",
            "no allow-list with apiEndpoint private",
            list(main.string_list("apiAllowedCidrs")),
        )
    if api == "public" and pending.offline and shutil.which("aliyun") is None:
        pending.add(
            "the aliyun CLI is not on PATH: `pulumi up` binds the API allow-list to the API "
            'server\'s listener with it (docs/platform.md, "The API endpoint")'
        )
    return api, allowed


def _node_key(main: Section, stack: str, pending: Pending) -> str | None:
    """The nodes' login key (ECS takes rsa, dsa or ecdsa keys)."""
    public_key: str | None = None
    key_how = (
        "ssh-keygen -t rsa -b 4096 -f ~/.ssh/trainstack-nodes && pulumi config set "
        f'trainstack:nodePublicKey "$(cat ~/.ssh/trainstack-nodes.pub)" --stack {stack}'
    )
    if main.has("nodePublicKey"):
        public_key = main.string(
            "nodePublicKey",
            pattern=r"\S+ [A-Za-z0-9+/=]+( .*)?",
            what="an OpenSSH public key",
        )
        # ECS ImportKeyPair (what ecs.EcsKeyPair calls) takes "rsa, dsa, ssh-rsa, ssh-dss,
        # ecdsa" keys and their certificates, not ed25519 (Alibaba Cloud API reference,
        # api-ecs-2014-05-26-importkeypair).
        if not public_key.startswith(NODE_KEY_TYPES):
            raise main.error(
                "nodePublicKey",
                "an rsa, dsa or ecdsa public key (ECS ImportKeyPair takes no other type)",
                public_key.split(" ", 1)[0] + " …",
                hint=key_how,
            )
    elif pending.offline:
        pending.add(f"trainstack:nodePublicKey is not set (node pools need a login): {key_how}")
    else:
        raise main.error(
            "nodePublicKey", "an OpenSSH public key (node pools need a login)", hint=key_how
        )
    return public_key


def _kubernetes_version(main: Section) -> str | None:
    """The cluster version, when pinned: 1.30 or later (ValidatingAdmissionPolicy v1)."""
    version = main.optional_string(
        "kubernetesVersion",
        pattern=r"1\.\d+\.\d+.*",
        what="a Kubernetes version such as 1.31.1-aliyun.1",
    )
    if version is not None and int(version.split(".")[1]) < MIN_KUBERNETES_MINOR:
        raise main.error(
            "kubernetesVersion",
            f"Kubernetes 1.{MIN_KUBERNETES_MINOR} or later (team volume guards need "
            "ValidatingAdmissionPolicy v1)",
            version,
        )
    return version


def _deployer(main: Section, stack: str, pending: Pending) -> Identity | None:
    how = (
        f"pulumi config set --path 'trainstack:deployer.uid' <RAM user or role id> --stack "
        f"{stack} (and deployer.ramRole true for a role, e.g. a CI runner's)"
    )
    if not main.has("deployer"):
        if pending.offline:
            pending.add(
                "trainstack:deployer is not set (the identity `pulumi up` runs as needs "
                f"cluster-admin on the new cluster): {how}"
            )
            return None
        raise main.error("deployer", "the RAM identity `pulumi up` runs as", hint=how)
    sec = main.section("deployer")
    identity = Identity(
        uid=sec.string("uid", pattern=r"\d{6,32}", what="a RAM user or role id (digits)"),
        ram_role=sec.boolean("ramRole", False),
    )
    sec.finish()
    return identity


def _system_pool(sec: Section) -> PoolConfig:
    """A fixed-size pool for system pods: autoscaled nodes carry k8s.aliyun.com=true, which
    keeps CoreDNS and other system components off them, so they need nodes of their own."""
    size = sec.integer("size", 2, minimum=1, maximum=20)
    types = sec.string_list(
        "instanceTypes",
        ["ecs.g7.xlarge"],
        min_items=1,
        pattern=_INSTANCE_TYPE,
        what="ECS instance types such as ecs.g7.xlarge",
    )
    pool = PoolConfig(
        name="system",
        instance_types=types,
        min_size=size,
        max_size=size,
        gpu=False,
        fixed_size=size,
        system_disk_size=sec.integer("systemDiskSize", 120, minimum=40, maximum=2048),
    )
    sec.finish()
    return pool


def _spot_pool(sec: Section) -> PoolConfig:
    """Spot capacity, tainted and labelled by what it holds: GPU nodes when gpuType is given."""
    has_gpu_type = sec.has("gpuType")
    accelerator = sec.string(
        "accelerator", "gpu" if has_gpu_type else "cpu", choices=("cpu", "gpu")
    )
    if accelerator == "cpu" and has_gpu_type:
        raise sec.error(
            "gpuType", "no gpuType on a CPU spot pool (accelerator: cpu)", sec.string("gpuType")
        )
    return _pool(sec, "spot", gpu=accelerator == "gpu", default_min=0, default_max=8, spot=True)


def _allow_list(main: Section, key: str, what: str, hint: str) -> tuple[str, ...]:
    """A list of CIDR blocks admitted to a public endpoint: each in a.b.c.d/n notation, none the
    whole internet, none twice (an ACL entry added twice fails: SLB AddAccessControlListEntry's
    InvalidParam.AclEntryExists)."""
    allowed = tuple(
        str(_parse_cidr(main, key, block))
        for block in main.string_list(key, min_items=1, what=what)
    )
    for block in allowed:
        if _parse_cidr(main, key, block).prefixlen == 0:
            raise main.error(key, "blocks narrower than the whole internet", block, hint=hint)
    twice = sorted({b for b in allowed if allowed.count(b) > 1})
    if twice:
        raise main.error(key, "each block once", twice[0])
    return allowed


def _parse_cidr(sec: Section, key: str, text: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(text)
    except ValueError:
        raise sec.error(key, "an IPv4 CIDR block such as 10.0.0.0/8", text) from None


def _cidr(sec: Section, key: str, default: str) -> ipaddress.IPv4Network:
    return _parse_cidr(sec, key, sec.string(key, default, what="an IPv4 CIDR block"))


def _pool(
    sec: Section,
    name: str | None,
    *,
    gpu: bool,
    default_min: int,
    default_max: int,
    default_types: list[str] | None = None,
    spot: bool = False,
) -> PoolConfig:
    pool_name = sec.string(
        "name", name or REQUIRED, pattern=_NAME, what="a pool name ([a-z0-9-], ≤ 32)"
    )
    types = sec.string_list(
        "instanceTypes",
        default_types or REQUIRED,
        min_items=1,
        pattern=_INSTANCE_TYPE,
        what="ECS instance types such as ecs.gn7i-c8g1.2xlarge",
    )
    lo = sec.integer("minSize", default_min, minimum=0)
    hi = sec.integer("maxSize", default_max, minimum=1, maximum=1000)
    # cs/_inputs.py NodePoolScalingConfigArgs: "`max_size` has to be greater than `min_size`".
    if lo >= hi:
        raise sec.error(
            "minSize",
            f"less than maxSize ({hi}): an autoscaled pool needs room to scale",
            lo,
            hint="for a fixed number of nodes use systemPool.size",
        )
    pool = PoolConfig(
        name=pool_name,
        instance_types=types,
        min_size=lo,
        max_size=hi,
        gpu=gpu,
        gpu_type=sec.optional_string(
            "gpuType", pattern=r"[A-Za-z0-9._-]+", what="a GPU model label such as A10"
        )
        if gpu
        else None,
        spot=spot,
        spot_price_limit=sec.optional_string(
            "priceLimit", pattern=r"\d+(\.\d+)?", what="a price per hour such as 2.5"
        )
        if spot
        else None,
        system_disk_size=sec.integer("systemDiskSize", 120, minimum=40, maximum=2048),
    )
    sec.finish()
    if spot and pool.spot_price_limit == "0":
        raise ConfigError(f"{sec.key('priceLimit')}: expected a positive price")
    return pool
