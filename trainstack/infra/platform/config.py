"""The platform's stack config, typed and checked before any resource exists.

``load`` turns the flat ``trainstack:*`` / ``kubedl:*`` values of a stack into frozen dataclasses,
or raises one ``ConfigError`` naming the key. The resource modules only ever see these objects.
Cloud (ack) settings live in ``config_ack``; this module holds what both modes share.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from trainstack import k8snames
from trainstack import platformnames as names
from trainstack.errors import ConfigError
from trainstack.infra.configread import REQUIRED, Pending, Section, split_namespace
from trainstack.infra.platform.config_ack import (
    ACK_KEYS,
    AckConfig,
    check_team_registry_namespaces,
    load_ack,
)
from trainstack.infra.platform.config_kueue import KueueConfig, load_kueue
from trainstack.infra.platform.config_kueue import enabled as kueue_enabled
from trainstack.infra.platform.config_oss import ACK_REFUSALS as OSS_ACK_REFUSALS
from trainstack.infra.platform.config_oss import KUBECONFIG_ONLY as OSS_KUBECONFIG_ONLY
from trainstack.infra.platform.config_oss import OSS_ACCESS_KEY_KEYS as OSS_ACCESS_KEY_KEYS
from trainstack.infra.platform.config_oss import OssKeys, load_buckets, load_oss_keys
from trainstack.infra.platform.config_teams import Team, load_teams
from trainstack.infra.platform.config_trainer import DOCKER_HUB_HOSTS as DOCKER_HUB_HOSTS
from trainstack.infra.platform.config_trainer import TrainerConfig, load_trainer, refuse_unused
from trainstack.infra.platform.inputs import KUBEDL_VERSION as KUBEDL_VERSION
from trainstack.infra.platform.inputs import default_crd_source
from trainstack.infra.platform.inputs import is_kubeconfig_contents as is_kubeconfig_contents
from trainstack.infra.platform.kubedl_source import DEFAULT_WORKLOADS as DEFAULT_WORKLOADS
from trainstack.infra.platform.kubedl_source import KUBEDL_CRDS as KUBEDL_CRDS
from trainstack.infra.platform.kubedl_source import (
    CrdFile,
    load_crds,
    mirror_command,
)
from trainstack.trainer.backend import DEFAULT_OPERATOR, OPERATOR_KEY, Operator

MODES = ("ack", "kubeconfig")
DNS_LABEL = k8snames.LABEL_63

# Plugin names KubeDL's gang-scheduler registry knows; "" (unset) disables gang scheduling.
GANG_SCHEDULERS = ("kube-coscheduler", "volcano", "kube-batch")
# The image KubeDL v0.5.0's own manifests deploy (config/manager/all_in_one.yaml and the Helm
# chart reference tag 0.4.2; no 0.5.0 tag is referenced anywhere). kubeconfig mode only: ack
# nodes in China regions generally cannot reach Docker Hub, so ack requires a mirrored digest.
KUBEDL_UPSTREAM_IMAGE = "docker.io/kubedl/kubedl:0.4.2"
_DIGEST = r"@sha256:[0-9a-f]{64}"

_KUBECONFIG_ONLY = (
    "kubeconfig",
    "kubeContext",
    "localProvisioner",
    "ossEndpoint",
    "artifactClaim",
    "artifactSize",
    "hostPathVolumes",
    *OSS_KUBECONFIG_ONLY,
)
# A team's token, as `trainstack scope publish` mints it (deploy/scopetoken.py): a week by default,
# so a weekly re-publish keeps teams working while a leaked token is good for days, not forever.
# The TokenRequest API refuses less than 10 minutes (one hour is the least whole hour); a year is
# the most trainstack asks, and the API server may cap it lower
# (--service-account-max-token-expiration).
DEFAULT_TEAM_TOKEN_HOURS = 168
# How many days after its job ended `trainstack gc` destroys a run's stack (trainstack:gcAfterDays):
# long enough to read a finished run's pods, short enough that a nightly gc keeps the cluster's
# PVs and the backend's resources to what recent runs hold.
DEFAULT_GC_AFTER_DAYS = 14
MAX_TEAM_TOKEN_HOURS = 24 * 365


@dataclass(frozen=True)
class KubeDLConfig:
    version: str
    crd_source: str  # the folder, as configured (relative to the project root)
    crds: tuple[CrdFile, ...]  # one per enabled workload, in workload order, verified
    # None (ack only, before the image is mirrored into the registry this stack creates): the
    # CRDs and RBAC are installed, the controller is not (a warning says so).
    image: str | None
    workloads: tuple[str, ...]
    gang_scheduler: str | None
    namespace: str
    replicas: int
    # False on a Kueue environment: a pod group needs all its pods at once (kueue/podgroup.py).
    dag_scheduling: bool = True


REGISTRY_KINDS = ("acr-enterprise", "external")
# The registry the platform creates (ack): nodes pull with short-lived, pull-only tokens
# (registry.py), so no registry password is ever written into the cluster.
ACR_ENTERPRISE = REGISTRY_KINDS[0]


@dataclass(frozen=True)
class RegistryConfig:
    server: str
    username: str
    # ack: "acr-enterprise" (the platform creates an ACR Enterprise instance: no console steps)
    # or "external" (bring your own registry); kubeconfig mode: always "external".
    kind: str = "external"

    @property
    def pulls_without_secret(self) -> bool:
        """Pods pull with the credential helper's tokens, not a pull Secret (registry.py)."""
        return self.kind == ACR_ENTERPRISE


@dataclass(frozen=True)
class ClusterAccess:
    """kubeconfig mode: how to reach the existing cluster."""

    kubeconfig: str | None  # a path or the file's contents; None means the ambient default
    context: str | None
    local_provisioner: str
    # The artifact store runs write to: an existing claim in every team namespace, or (None) a
    # claim of artifact_size the platform creates there.
    artifact_claim: str | None = None
    artifact_size: str = "50Gi"
    oss_endpoint: str | None = None  # where OSS volumes mount from, off Alibaba Cloud's VPCs
    # A single-user local cluster (kind) whose runs bind file:// as hostPath volumes: team
    # namespaces enforce Pod Security "privileged" instead of "baseline" (podsecurity.py).
    host_path_volumes: bool = False


@dataclass(frozen=True)
class PlatformConfig:
    stack: str
    mode: Literal["ack", "kubeconfig"]
    teams: tuple[Team, ...]
    kubedl: KubeDLConfig
    registry: RegistryConfig
    ack: AckConfig | None
    cluster: ClusterAccess | None
    # kubeconfig mode: which teams hold an OSS AccessKey (its values are read, as secrets, only
    # by the program that puts them into each team's trainstack-oss Secret); None: no team does.
    oss_keys: OssKeys | None = None
    # kubeconfig mode: the buckets team keys may reach (trainstack:ossBuckets); () when not named.
    oss_buckets: tuple[str, ...] = ()
    # An offline plan (``trainstack plan``) of an environment not yet set up: what ``pulumi up``
    # will refuse until it is done (a secret to set, CRDs to mirror, a login key, ...). For
    # ``pulumi up``/``preview`` each of these is a ConfigError instead, except an unset
    # kubedl:image on ack (the first run creates the registry it is mirrored into), a warning.
    pending: tuple[str, ...] = ()
    offline: bool = False
    # How long a scope's bound token lasts (trainstack:teamTokenHours), and whether the platform
    # still makes each team's non-expiring token Secret and `teamKubeconfigs`
    # (trainstack:legacyTeamTokens: false once every team deploys from a published scope).
    team_token_hours: int = DEFAULT_TEAM_TOKEN_HOURS
    legacy_team_tokens: bool = True
    gc_after_days: int = DEFAULT_GC_AFTER_DAYS
    # The operator that runs the environment's jobs (trainstack:operator): KubeDL unless named.
    operator: Operator = DEFAULT_OPERATOR
    # operator trainer only: what the platform installs for it (Trainer, JobSet, the runtimes).
    trainer: TrainerConfig | None = None
    # Job-level queues (any kueue:* key set): Kueue and the teams' queues (config_kueue.py).
    kueue: KueueConfig | None = None


# The spec reader's size rule (trainstack.yamlsource.MAX_BYTES): a kubeconfig with a few
# embedded certificates is a few KB.
MAX_KUBECONFIG_BYTES = 1 << 20


def _kubeconfig(main: Section) -> str | None:
    """`trainstack:kubeconfig`, contents or a path; a path must name a regular file of at most
    MAX_KUBECONFIG_BYTES. `/dev/zero` there was read until memory ran out, a FIFO forever."""
    value = main.optional_string("kubeconfig")
    if value is None or is_kubeconfig_contents(value):
        return value
    if "\0" in value:
        raise main.error("kubeconfig", "a path to a kubeconfig file", "a path with a NUL byte")
    try:
        info = os.stat(Path(value).expanduser())
    except FileNotFoundError:
        return value  # an offline plan may run where the file is not: read as before
    except OSError as err:
        raise main.error(
            "kubeconfig", "a path to a kubeconfig file", f"{value!r} ({err.strerror})"
        ) from None
    except RuntimeError:  # expanduser: `~name/...` for a user this machine does not have
        raise main.error(
            "kubeconfig", "a path to a kubeconfig file", f"{value!r} (no such user's home)"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise main.error(
            "kubeconfig",
            "a path to a kubeconfig file",
            f"{value!r}, {_file_kind(info.st_mode)}",
            hint="name the kubeconfig file itself (trainstack reads it whole)",
        )
    if info.st_size > MAX_KUBECONFIG_BYTES:
        raise main.error(
            "kubeconfig",
            f"a kubeconfig file of at most {MAX_KUBECONFIG_BYTES:,} bytes",
            f"{value!r}, {info.st_size:,} bytes",
        )
    return value


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def load(
    values: Mapping[str, Any],
    *,
    stack: str,
    source: str,
    secret_keys: frozenset[str] = frozenset(),
    root: Path | None = None,
    offline: bool = False,
) -> PlatformConfig:
    """Check and type the raw config of one stack (``source`` names it in errors).

    ``root`` is the project folder ``kubedl:crdSource`` is relative to (default: the nearest
    ``Pulumi.yaml`` above the working directory). ``offline`` (``trainstack plan``) turns the set-up
    steps a new environment still lacks into ``pending`` entries instead of errors.
    """
    pending = Pending(offline)
    main = Section(
        split_namespace(values, names.PLATFORM_PROJECT),
        f"{names.PLATFORM_PROJECT}:",
        source,
        secret_keys,
        top_level=True,
    )
    mode = main.string("mode", choices=MODES)
    teams = load_teams(main)
    kubedl_sec = Section(
        split_namespace(values, names.KUBEDL_CONFIG_NS),
        f"{names.KUBEDL_CONFIG_NS}:",
        source,
        top_level=True,
    )
    ack: AckConfig | None = None
    cluster: ClusterAccess | None = None
    oss: tuple[OssKeys | None, tuple[str, ...]] = (None, ())
    if mode == "ack":
        ack = load_ack(main, stack, pending)
        other = {k: "only used when trainstack:mode is kubeconfig" for k in _KUBECONFIG_ONLY}
        other |= OSS_ACK_REFUSALS
        registry = _ack_registry(main, ack)
    else:
        oss = (load_oss_keys(main, source, stack, [t.name for t in teams]), load_buckets(main))
        cluster = _cluster_access(main, oss_keys=oss[0] is not None)
        other = {k: "only used when trainstack:mode is ack" for k in ACK_KEYS}
        registry = RegistryConfig(
            server=main.string(
                "registryServer",
                pattern=r"[A-Za-z0-9.-]+(:\d+)?",
                what="a registry host such as registry.example.com",
            ),
            username=main.string("registryUsername"),
        )
    how = "pulumi config set --secret trainstack:registryPassword <password> --stack " + stack
    if offline and not main.has("registryPassword"):
        pending.add(f"trainstack:registryPassword is not set: {how}")
    else:
        main.require_secret_key("registryPassword", how)
        if ack is not None and registry.kind == "acr-enterprise" and not offline:
            password = split_namespace(values, names.PLATFORM_PROJECT)["registryPassword"]
            _check_acr_password(main.key("registryPassword"), source, password, how)
    kubedl = _kubedl(kubedl_sec, ack is not None, root, pending)
    if ack is not None and kubedl.gang_scheduler is not None:
        _check_ack_gang_scheduler(kubedl_sec, kubedl.gang_scheduler, ack)
    if ack is not None and registry.kind == ACR_ENTERPRISE:
        check_team_registry_namespaces(main, ack, [t.name for t in teams])
    if ack is not None and registry.kind == "acr-enterprise" and kubedl.image is not None:
        _check_platform_registry_image(kubedl_sec, kubedl.image, registry.server, ack)
    _check_costs(main, values, stack, source, teams)
    token_hours = main.integer(
        "teamTokenHours", DEFAULT_TEAM_TOKEN_HOURS, minimum=1, maximum=MAX_TEAM_TOKEN_HOURS
    )
    legacy_tokens = main.boolean("legacyTeamTokens", True)
    gc_after_days = main.integer("gcAfterDays", DEFAULT_GC_AFTER_DAYS, minimum=1, maximum=36500)
    operator = main.string(OPERATOR_KEY, DEFAULT_OPERATOR.value, choices=tuple(Operator))
    trainer: TrainerConfig | None = None
    if operator == Operator.TRAINER:
        base = root if root is not None else _project_root()
        trainer = load_trainer(values, source, ack=ack is not None, root=base, pending=pending)
    else:
        refuse_unused(values, source)
    kueue, kubedl = _queues(values, source, teams, kubedl, ack is not None, root, pending)
    main.finish(other)
    return PlatformConfig(
        stack=stack,
        mode="ack" if mode == "ack" else "kubeconfig",
        teams=teams,
        kubedl=kubedl,
        registry=registry,
        ack=ack,
        cluster=cluster,
        oss_keys=oss[0],
        oss_buckets=oss[1],
        pending=tuple(pending.items),
        offline=offline,
        team_token_hours=token_hours,
        legacy_team_tokens=legacy_tokens,
        gc_after_days=gc_after_days,
        operator=Operator(operator),
        trainer=trainer,
        kueue=kueue,
    )


def _queues(
    values: Mapping[str, Any],
    source: str,
    teams: tuple[Team, ...],
    kubedl: KubeDLConfig,
    ack: bool,
    root: Path | None,
    pending: Pending,
) -> tuple[KueueConfig | None, KubeDLConfig]:
    """Kueue, when any kueue:* key is set; KubeDL then runs without DAG scheduling (a pod group
    needs all its pods at once: trainstack.kueue.podgroup)."""
    if not kueue_enabled(values):
        return None, kubedl
    base = root if root is not None else _project_root()
    names_ = tuple(t.name for t in teams)
    kueue = load_kueue(values, source, names_, ack=ack, root=base, pending=pending)
    return kueue, replace(kubedl, dag_scheduling=False)


def _check_costs(
    main: Section, values: Mapping[str, Any], stack: str, source: str, teams: tuple[Team, ...]
) -> None:
    """trainstack:costs: the rates `runs list --cost` prices runs at (trainstack.metrics.cost);
    the platform itself does not use them, but checks them where the environment is checked,
    with the team budgets that need them."""
    _check_budgets(main, teams, source)
    if main.has("costs"):
        from trainstack.metrics.cost import parse_rates

        parse_rates(split_namespace(values, names.PLATFORM_PROJECT)["costs"], stack, source)


def _check_budgets(main: Section, teams: tuple[Team, ...], source: str) -> None:
    """A budget in money needs the rates that turn a run's requests into money."""
    from trainstack.infra.platform.config_budget import AMOUNT

    if main.has("costs"):
        return
    for i, team in enumerate(teams):
        if team.budget is not None and team.budget.unit == AMOUNT:
            raise ConfigError(
                f"{source}: trainstack:teams[{i}].budget.amount: a budget in money needs "
                "trainstack:costs (the rates that price a run)",
                hint="set trainstack:costs, or give the budget in gpuHours",
            )


def _check_ack_gang_scheduler(sec: Section, gang: str, ack: AckConfig) -> None:
    """ACK's gang scheduling is ACK Pro's own kube-scheduler ("Work with gang scheduling": "only
    for ACK Pro clusters"), which implements coscheduling: KubeDL's ``kube-coscheduler`` creates a
    PodGroup (scheduling.sigs.k8s.io/v1alpha1) and labels every pod
    ``pod-group.scheduling.sigs.k8s.io/{name,min-available}`` (KubeDL v0.5.0
    pkg/gang_schedule/coscheduler/scheduler.go). Volcano and kube-batch are schedulers this
    platform does not install on ACK, so jobs naming them would stay Pending forever."""
    if gang != "kube-coscheduler":
        raise sec.error(
            "gangScheduler",
            "kube-coscheduler or none on ack (ACK Pro's scheduler implements coscheduling; "
            f"{gang} is a scheduler this platform does not install)",
            gang,
        )
    if not ack.cluster_spec.startswith("ack.pro."):
        raise sec.error(
            "gangScheduler",
            "none on an ack.standard cluster: ACK offers gang scheduling only on ACK Pro",
            gang,
            hint="set trainstack:clusterSpec ack.pro.small, or kubedl:gangScheduler none",
        )


def _ack_registry(main: Section, ack: AckConfig) -> RegistryConfig:
    kind = main.string("registryType", "acr-enterprise", choices=REGISTRY_KINDS)
    if kind == "acr-enterprise":
        # An ACR Enterprise instance's VPC domain (pulumi_alicloud cr/storage_domain_routing_rule.py
        # example: "<instance_name>-registry-vpc.<region>.cr.aliyuncs.com").
        default: Any = f"{ack.registry_instance}-registry-vpc.{ack.region}.cr.aliyuncs.com"
    else:
        default = REQUIRED
        if ack.registry_allowed_cidrs:
            raise main.error(
                "registryAllowedCidrs",
                "no allow-list with registryType external (it is for the ACR instance the "
                "platform creates)",
                list(ack.registry_allowed_cidrs),
            )
    return RegistryConfig(
        server=main.string(
            "registryServer",
            default,
            pattern=r"[A-Za-z0-9.-]+(:\d+)?",
            what="a registry host such as registry.example.com",
        ),
        username=main.string("registryUsername"),
        kind=kind,
    )


def _check_platform_registry_image(sec: Section, image: str, server: str, ack: AckConfig) -> None:
    """An image on the ACR instance this stack creates must be in a repository it creates: the
    namespace is created with auto_create false (registry.py; pulumi_alicloud
    cs/registry_enterprise_namespace.py), so a push to any other path is refused and the
    controller's pull fails."""
    public = server.replace("-registry-vpc.", "-registry.", 1)
    host, _, rest = image.partition("/")
    if host not in (server, public):
        return
    path = rest.split("@", 1)[0]
    namespace, _, repo = path.partition("/")
    if namespace != ack.registry_namespace or repo not in ack.registry_repos:
        where = ", ".join(f"{server}/{ack.registry_namespace}/{r}" for r in ack.registry_repos)
        raise sec.error(
            "image",
            "an image in a repository the platform's registry has "
            f"(trainstack:registryNamespace {ack.registry_namespace!r}, "
            f"trainstack:registryRepos: {where or 'none'})",
            image,
            hint="add the repository to trainstack:registryRepos, or mirror the image to "
            f"{server}/{ack.registry_namespace}/kubedl",
        )


def _check_acr_password(key: str, source: str, password: Any, how: str) -> None:
    """The ACR Enterprise instance's login password (registry.py passes it to the instance):
    "8-32 digits, must contain at least two letters, symbols, or numbers" (pulumi_alicloud
    cr/registry_enterprise_instance.py, password), i.e. two of those three kinds. The value is
    never shown."""
    text = password if isinstance(password, str) else ""
    kinds = sum(
        (
            any(c.isalpha() for c in text),
            any(c.isdigit() for c in text),
            any(not c.isalnum() for c in text),
        )
    )
    if not 8 <= len(text) <= 32 or kinds < 2:
        raise ConfigError(
            f"{source}: {key}: the ACR Enterprise login password must be 8 to 32 characters "
            "with at least two of letters, digits and symbols (the value is not shown)",
            hint=how,
        )


def _oss_endpoint(main: Section, *, required: bool) -> str | None:
    """kubeconfig mode: where OSS volumes mount from. Off Alibaba Cloud's VPCs the region's
    internal endpoint is unreachable, so with AccessKeys the endpoint must be named."""
    pattern = r"[a-z0-9.-]+\.aliyuncs\.com"
    what = "an OSS endpoint such as oss-cn-hangzhou.aliyuncs.com"
    if required:
        return main.string("ossEndpoint", pattern=pattern, what=what)
    return main.optional_string("ossEndpoint", pattern=pattern, what=what)


def _cluster_access(main: Section, *, oss_keys: bool) -> ClusterAccess:
    return ClusterAccess(
        kubeconfig=_kubeconfig(main),
        context=main.optional_string("kubeContext"),
        local_provisioner=main.string("localProvisioner", "rancher.io/local-path"),
        artifact_claim=main.optional_string(
            "artifactClaim", pattern=DNS_LABEL, what="a PersistentVolumeClaim name"
        ),
        artifact_size=main.quantity("artifactSize", "50Gi"),
        oss_endpoint=_oss_endpoint(main, required=oss_keys),
        host_path_volumes=main.boolean("hostPathVolumes", False),
    )


def _kubedl(sec: Section, ack: bool, root: Path | None, pending: Pending) -> KubeDLConfig:
    version = sec.string(
        "version",
        KUBEDL_VERSION,
        pattern=r"v\d+\.\d+\.\d+",
        what="a pinned release tag such as v0.5.0",
    )
    workloads = sec.string_list(
        "workloads",
        list(DEFAULT_WORKLOADS),
        min_items=1,
        choices=tuple(KUBEDL_CRDS),
        what="KubeDL workload kinds",
    )
    gang = sec.string("gangScheduler", "none", choices=("none", *GANG_SCHEDULERS))
    crd_source = sec.string(
        "crdSource",
        default_crd_source(version),
        pattern=r"[A-Za-z0-9._/-]+",
        what="a folder of the repository such as platform/kubedl/v0.5.0",
    )
    if crd_source.startswith("/") or ".." in crd_source.split("/"):
        raise sec.error("crdSource", "a folder inside the repository", crd_source)
    image = _kubedl_image(sec, ack, pending)
    cfg_namespace = sec.string("namespace", "kubedl-system", pattern=DNS_LABEL, what="a DNS label")
    replicas = sec.integer("replicas", 1, minimum=1, maximum=5)
    if sec.has("repo"):
        raise ConfigError(
            f"{sec.key('repo')}: no longer read: KubeDL's CRDs are not fetched from the internet",
            hint=f"remove it; the CRDs come from kubedl:crdSource ({crd_source}), "
            f"filled by: {mirror_command(crd_source)}",
        )
    sec.finish()
    base = root if root is not None else _project_root()
    crds, crd_pending = load_crds(
        base / crd_source, crd_source.rstrip("/"), version, workloads, offline=pending.offline
    )
    for step in crd_pending:
        pending.add(step)
    return KubeDLConfig(
        version=version,
        crd_source=crd_source,
        crds=crds,
        image=image,
        workloads=workloads,
        gang_scheduler=None if gang == "none" else gang,
        namespace=cfg_namespace,
        replicas=replicas,
    )


def _project_root() -> Path:
    from trainstack.envfile import find_project

    return find_project().root


KUBEDL_IMAGE_HOW = (
    "mirror KubeDL's image into the platform's registry and pin its digest: pulumi config set "
    "kubedl:image <registry>/<namespace>/kubedl@sha256:<digest> (docs/platform.md, 'Mirroring "
    "KubeDL's image')"
)


def _kubedl_image(sec: Section, ack: bool, pending: Pending) -> str | None:
    """The controller image: pinned by digest and not from Docker Hub on ack (see docs/platform.md).

    On ack it may be left unset for the first `pulumi up`: the registry it is mirrored into is
    created by that run. The controller is then not deployed, and the plan lists the step.
    """
    how = KUBEDL_IMAGE_HOW
    if ack and not sec.has("image"):
        pending.add(
            "kubedl:image is not set, so KubeDL's controller is not deployed (its CRDs "
            f"and RBAC are): {how}"
        )
        return None
    image = sec.string(
        "image",
        KUBEDL_UPSTREAM_IMAGE,
        pattern=r"[^\s@]+(:[\w.-]+)?(@sha256:\S+)?",
        what="an image reference",
    )
    if image.endswith(":latest"):
        raise ConfigError(f"{sec.key('image')}: expected a pinned tag, not :latest")
    if not ack:
        return image
    if not re.search(_DIGEST + "$", image):
        raise sec.error(
            "image", "an image pinned by digest (…@sha256:<64 hex digits>) on ack", image, hint=how
        )
    first = image.split("/", 1)[0]
    registry_host = "/" in image and ("." in first or ":" in first or first == "localhost")
    if not registry_host or first in DOCKER_HUB_HOSTS:
        raise sec.error(
            "image",
            "an image in a registry the nodes reach, not Docker Hub (nodes "
            "in China regions generally cannot pull from it)",
            image,
            hint=how,
        )
    return image
