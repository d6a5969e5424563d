"""The platform's stack config, typed and checked before any resource exists.

``load`` turns the flat ``trainstack:*`` / ``kubedl:*`` values of a stack into frozen dataclasses,
or raises one ``ConfigError`` naming the key. The resource modules only ever see these objects.
Cloud (ack) settings live in ``config_ack``; this module holds what both modes share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainstack.errors import ConfigError
from trainstack.infra import names
from trainstack.infra.configread import REQUIRED, Section, split_namespace
from trainstack.infra.platform.config_ack import ACK_KEYS, AckConfig, load_ack

MODES = ("ack", "kubeconfig")
DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"

# KubeDL workload kind -> its CRD file under the release's config/crd/bases.
KUBEDL_CRDS: dict[str, str] = {
    "TFJob": "training.kubedl.io_tfjobs.yaml",
    "PyTorchJob": "training.kubedl.io_pytorchjobs.yaml",
    "XGBoostJob": "training.kubedl.io_xgboostjobs.yaml",
    "MPIJob": "training.kubedl.io_mpijobs.yaml",
    "MarsJob": "training.kubedl.io_marsjobs.yaml",
    "XDLJob": "training.kubedl.io_xdljobs.yaml",
    "ElasticDLJob": "training.kubedl.io_elasticdljobs.yaml",
    "ElasticBatchJob": "inference.kubedl.io_elasticbatchjobs.yaml",
}
DEFAULT_WORKLOADS = ("TFJob", "PyTorchJob", "XGBoostJob", "MPIJob", "ElasticBatchJob")
# Plugin names KubeDL's gang-scheduler registry knows; "" (unset) disables gang scheduling.
GANG_SCHEDULERS = ("kube-coscheduler", "volcano", "kube-batch")
KUBEDL_VERSION = "v0.5.0"
KUBEDL_REPO = "https://raw.githubusercontent.com/kubedl-io/kubedl"

_KUBECONFIG_ONLY = ("kubeconfig", "kubeContext", "localProvisioner")
# kubeconfig mode, optional: the AccessKey the OSS CSI driver mounts oss:// volumes with. Both
# keys or neither, each a secret. ack mode never takes one (its OSS volumes use RRSA).
OSS_ACCESS_KEY_KEYS = ("ossAccessKeyId", "ossAccessKeySecret")


@dataclass(frozen=True)
class Quota:
    cpu: str
    memory: str
    gpu: int
    pods: int | None


@dataclass(frozen=True)
class Team:
    name: str
    namespace: str
    quota: Quota


@dataclass(frozen=True)
class KubeDLConfig:
    version: str
    repo: str
    image: str
    workloads: tuple[str, ...]
    gang_scheduler: str | None
    namespace: str
    replicas: int

    def crd_urls(self) -> tuple[str, ...]:
        """Pinned URLs of the CRDs for the enabled workloads; fetched by the provider at deploy."""
        base = f"{self.repo.rstrip('/')}/{self.version}/config/crd/bases"
        return tuple(f"{base}/{KUBEDL_CRDS[w]}" for w in self.workloads)


@dataclass(frozen=True)
class RegistryConfig:
    server: str
    username: str


@dataclass(frozen=True)
class ClusterAccess:
    """kubeconfig mode: how to reach the existing cluster."""

    kubeconfig: str | None  # a path or the file's contents; None means the ambient default
    context: str | None
    local_provisioner: str


@dataclass(frozen=True)
class PlatformConfig:
    stack: str
    mode: Literal["ack", "kubeconfig"]
    teams: tuple[Team, ...]
    kubedl: KubeDLConfig
    registry: RegistryConfig
    ack: AckConfig | None
    cluster: ClusterAccess | None
    # kubeconfig mode: the stack config holds an OSS AccessKey (its values are read, as secrets,
    # only by the program that puts them into the trainstack-oss Secret).
    oss_access_key: bool = False


def load(values: Mapping[str, Any], *, stack: str, source: str,
         secret_keys: frozenset[str] = frozenset()) -> PlatformConfig:
    """Check and type the raw config of one stack (``source`` names it in errors)."""
    main = Section(split_namespace(values, names.PLATFORM_PROJECT), f"{names.PLATFORM_PROJECT}:",
                   source, secret_keys, top_level=True)
    mode = main.string("mode", choices=MODES)
    teams = _teams(main)
    kubedl = _kubedl(Section(split_namespace(values, names.KUBEDL_CONFIG_NS),
                             f"{names.KUBEDL_CONFIG_NS}:", source, top_level=True))
    ack: AckConfig | None = None
    cluster: ClusterAccess | None = None
    oss_access_key = False
    if mode == "ack":
        ack = load_ack(main, stack)
        # ACR personal edition, reached over the VPC endpoint (the seed's rule for custom images).
        default_server: Any = f"registry-vpc.{ack.region}.aliyuncs.com"
        other = {k: "only used when trainstack:mode is kubeconfig" for k in _KUBECONFIG_ONLY}
        other |= {k: "not used when trainstack:mode is ack: OSS volumes mount with the "
                     "platform's jobs RAM role (RRSA), no AccessKey" for k in OSS_ACCESS_KEY_KEYS}
    else:
        cluster = ClusterAccess(
            kubeconfig=main.optional_string("kubeconfig"),
            context=main.optional_string("kubeContext"),
            local_provisioner=main.string("localProvisioner", "rancher.io/local-path"),
        )
        oss_access_key = _oss_access_key(main, stack)
        default_server = REQUIRED  # no sensible default off-cloud
        other = {k: "only used when trainstack:mode is ack" for k in ACK_KEYS}
    registry = RegistryConfig(
        server=main.string("registryServer", default_server, pattern=r"[A-Za-z0-9.-]+(:\d+)?",
                           what="a registry host such as registry.example.com"),
        username=main.string("registryUsername"),
    )
    main.require_secret_key(
        "registryPassword",
        "pulumi config set --secret trainstack:registryPassword <password> --stack " + stack)
    main.finish(other)
    return PlatformConfig(stack=stack, mode="ack" if mode == "ack" else "kubeconfig",
                          teams=teams, kubedl=kubedl, registry=registry, ack=ack, cluster=cluster,
                          oss_access_key=oss_access_key)


def _oss_access_key(main: Section, stack: str) -> bool:
    """Whether the stack configures an OSS AccessKey: both keys, as secrets, or neither."""
    given = [k for k in OSS_ACCESS_KEY_KEYS if main.has(k)]
    how = "; ".join(f"pulumi config set --secret trainstack:{k} <{k}> --stack {stack}"
                    for k in OSS_ACCESS_KEY_KEYS)
    if not given:
        return False
    for key in OSS_ACCESS_KEY_KEYS:  # the missing one, or one set in plain text, is the error
        main.require_secret_key(key, how)
    return True


def _teams(main: Section) -> tuple[Team, ...]:
    teams: list[Team] = []
    for item in main.sections("teams", min_items=1):
        name = item.string("name", pattern=DNS_LABEL, what="a DNS label ([a-z0-9-], ≤ 63)")
        namespace = item.string("namespace", name, pattern=DNS_LABEL,
                                what="a DNS label ([a-z0-9-], ≤ 63)")
        if namespace in ("default", "kubedl-system") or namespace.startswith("kube-"):
            raise item.error("namespace", "a namespace of its own, not a system one", namespace)
        q = item.section("quota")
        quota = Quota(cpu=q.quantity("cpu"), memory=q.quantity("memory"),
                      gpu=q.integer("gpu", 0, minimum=0),
                      pods=q.integer("pods", minimum=1) if q.has("pods") else None)
        q.finish()
        item.finish()
        if any(t.namespace == namespace for t in teams):
            raise item.error("namespace", "a namespace no other team uses", namespace)
        teams.append(Team(name=name, namespace=namespace, quota=quota))
    return tuple(teams)


def _kubedl(sec: Section) -> KubeDLConfig:
    version = sec.string("version", KUBEDL_VERSION, pattern=r"v\d+\.\d+\.\d+",
                         what="a pinned release tag such as v0.5.0")
    workloads = sec.string_list("workloads", list(DEFAULT_WORKLOADS), min_items=1,
                                choices=tuple(KUBEDL_CRDS), what="KubeDL workload kinds")
    gang = sec.string("gangScheduler", "none", choices=("none", *GANG_SCHEDULERS))
    cfg = KubeDLConfig(
        version=version,
        repo=sec.string("repo", KUBEDL_REPO, pattern=r"https?://\S+",
                        what="an http(s) URL under which <version>/config/crd/bases/ is served"),
        image=sec.string("image", f"docker.io/kubedl/kubedl:{version.removeprefix('v')}",
                         pattern=r"\S+:\S+", what="an image reference with a tag"),
        workloads=workloads,
        gang_scheduler=None if gang == "none" else gang,
        namespace=sec.string("namespace", "kubedl-system", pattern=DNS_LABEL,
                             what="a DNS label"),
        replicas=sec.integer("replicas", 1, minimum=1, maximum=5),
    )
    sec.finish()
    if cfg.image.endswith(":latest"):
        raise ConfigError(f"{sec.key('image')}: expected a pinned tag, not :latest")
    return cfg
