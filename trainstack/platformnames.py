"""Names shared by the platform program, the run program and the renderer.

These are contracts: a run with ``priority: 5`` is rendered with
``priorityClassName: trainstack-priority-5``, and the platform creates exactly those classes.
Changing a name here is a breaking change for every deployed run.
"""

from __future__ import annotations

import os

from trainstack import k8snames
from trainstack.envnames import PLATFORM_STACK_ENV, SCOPE_STACK_ENV

MIN_KUBERNETES_MINOR = 30
"""The oldest Kubernetes (1.x) the platform runs on: its team volume guards are
ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1; Kubernetes docs, "Validating
Admission Policy": feature state stable since v1.30). The ack config refuses an older
`kubernetesVersion`, and the local runner follows what this version's kubelet and controllers
do (trainstack.kubedl.restart.deleted_pod_rule)."""

PLATFORM_PROJECT = "trainstack"
"""The platform's Pulumi project name; also the namespace of its config keys."""

KUBEDL_CONFIG_NS = "kubedl"
"""Config namespace for the KubeDL install (``kubedl:version``, ``kubedl:crdSource``, ...)."""

JOBSET_CONFIG_NS = "jobset"
"""Config namespace for the JobSet install beside Trainer (``jobset:crdSource``, ...)."""

RUNS_PROJECT = "trainstack-runs"
"""The Pulumi project that holds one stack per run."""

TEAM_TAG = "team"
"""The run tag that names its team, hence its namespace (docs/deploy.md)."""

ENV_TAG = "env"
"""The run tag that names the environment a run is written for (its sizes, buckets and team).
The examples' tests plan each run there, and CI deploys a run only to the environment its tag
names (``trainstack changed --env``); ``plan`` and ``deploy`` by hand take any environment the run
fits. A run without it is local-only as far as CI is concerned."""

OSS_CSI_DRIVER = "ossplugin.csi.alibabacloud.com"
NAS_CSI_DRIVER = "nasplugin.csi.alibabacloud.com"
DISK_CSI_DRIVER = "diskplugin.csi.alibabacloud.com"
"""Alibaba Cloud's CSI drivers (ACK's csi-plugin provisioner names): the StorageClasses'
provisioners, the renderer's OSS PVs, the volume admission policy and the storage policy rule."""

PRIORITIES = range(1, 10)
"""Run priorities 1..9 (PAI DLC's quota priorities); higher runs first."""

# The classes Kubernetes creates itself and admits in any namespace (Kubernetes docs, "Pod
# Priority and Preemption": since 1.17 not limited to kube-system); above every run priority.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")

PULL_SECRET_NAME = "trainstack-registry"
"""The image pull secret created in every team namespace."""

OSS_SECRET_NAME = "trainstack-oss"
"""kubeconfig mode with an OSS AccessKey: the Secret (``akId``, ``akSecret``) the OSS CSI driver
mounts with, in every team namespace (the renderer's default ``--oss-secret``). ack mode has none:
its OSS volumes use the jobs RAM role through RRSA."""

# StorageClass names, by role. ack creates disk/nas/oss; kubeconfig mode creates local.
STORAGE_CLASS_DISK = "trainstack-disk"
STORAGE_CLASS_NAS = "trainstack-nas"
STORAGE_CLASS_OSS = "trainstack-oss"
STORAGE_CLASS_LOCAL = "trainstack-local"

# Platform stack output keys the run program reads through a StackReference.
OUT_KUBECONFIG = "kubeconfig"
OUT_KUBE_CONTEXT = "kubeContext"
OUT_NAMESPACES = "namespaces"
OUT_STORAGE_CLASSES = "storageClasses"
OUT_REGISTRY = "registry"
OUT_PULL_SECRET = "pullSecretName"
OUT_KUBEDL_VERSION = "kubedlVersion"
# A Trainer environment (trainstack:operator trainer): the releases it installed.
OUT_TRAINER_VERSION = "trainerVersion"
OUT_JOBSET_VERSION = "jobsetVersion"
OUT_PRIORITY_CLASSES = "priorityClasses"
OUT_JOBS_ROLE = "jobsRole"
OUT_OSS_AUTH = "ossAuth"
OUT_HOST_PATH_VOLUMES = "hostPathVolumes"
"""Whether team namespaces admit hostPath volumes (Pod Security ``privileged``: a single-user local
cluster that set ``trainstack:hostPathVolumes``), hence whether file:// bindings render."""
"""How OSS volumes authenticate on this platform; names only, never a credential:
``{"type": "rrsa", "roleName": ...}`` (ack), ``{"type": "secret", "secretName": ...,
"teams": [...]}`` (kubeconfig mode: the Secret in the namespace of each team listed, holding that
team's AccessKey; a platform that lists no teams put one in every team namespace) or
``{"type": "none"}`` (kubeconfig mode without keys)."""
OUT_OSS_ENDPOINT = "ossEndpoint"
"""The OSS endpoint volumes mount from: the region's internal endpoint on ack, the configured
``trainstack:ossEndpoint`` in kubeconfig mode ("" when none is configured)."""
OUT_ARTIFACT_STORE = "artifactStore"
"""Where runs write their outputs: ``oss://<artifacts bucket>/`` on ack, ``pvc://<claim>/`` in
kubeconfig mode (a claim of that name exists in every team namespace). A run's output goes to
``<artifactStore>/<team>/<run>/<output>/``."""
OUT_TEAM_MAX_PRIORITY = "teamMaxPriority"
"""Team name -> the highest run priority the team's namespace admits."""
OUT_TEAM_KUBECONFIGS = "teamKubeconfigs"
"""Optional, secret: {namespace: kubeconfig} with credentials scoped to that team namespace (a
ServiceAccount token). Run stacks and ``status``/``logs``/``wait`` prefer it to the admin
``kubeconfig`` when the platform exports one for the run's namespace."""
OUT_GC_AFTER_DAYS = "gcAfterDays"
"""How many days after a run's job ended ``trainstack gc`` destroys its stack by default
(``trainstack:gcAfterDays``)."""
OUT_TEAM_TOKEN_HOURS = "teamTokenHours"
"""How long a team's token lasts when ``trainstack scope publish`` mints it
(``trainstack:teamTokenHours``); the API server may shorten it, and the scope records what it
granted (``OUT_TEAM_TOKEN``)."""
OUT_TEAM_TOKEN = "teamToken"
"""A team scope's only: its credential's non-secret facts, ``{team, namespace, serviceAccount,
expires}`` (``expires``: the TokenRequest's ``status.expirationTimestamp``, RFC 3339), which every
reader of the scope checks before using it (deploy/scopetoken.py)."""
OUT_NODE_POOLS = "nodePools"
"""ack only: each node pool's ``name``, ``labels``, ``taints`` ({key, value, effect}),
``instanceTypes``, ``maxSize`` (the most nodes it may have: the autoscaler's bound, or the fixed
pool's size), and one node's ``cpu`` (vCPUs), ``memory`` (a quantity) and ``gpus`` (``None`` when
an instance type's shape is unknown). The fit rules ``pod-fits-node-pool`` and ``job-fits-pools``
read it."""
OUT_TEAM_DEFAULTS = "teamDefaults"
"""Team name -> what its namespace's LimitRange gives a container that states no requests or
limits: ``{cpu, memory, limitCpu, limitMemory}`` (quantities). The fit rules count a rendered
role without requests at these, as the API server's LimitRanger admits it."""
OUT_OPERATOR = "operator"
"""The operator that runs the environment's jobs, ``kubedl`` or ``trainer``: both the platform's
config key (``trainstack:operator``) and its output, which a run's render, plan and deploy read
(a platform that does not export it runs KubeDL)."""
OUT_KUEUE_QUEUES = "kueueQueues"
"""A Kueue environment's queues (trainstack.infra.platform.queues.QueueModel.to_output): the
cohort, the LocalQueue name every team namespace has, the flavors, and per team its ClusterQueue,
weight and per-flavor nominal quota and limits. Absent: jobs are not queued."""
OUT_GANG_SCHEDULER = "kubedlGangScheduler"
"""The gang scheduler KubeDL hands its jobs to (``kubedl:gangScheduler``), "" when none: with one,
a job none of whose pods start until all fit."""
# ack with the platform's ACR: per team the registry namespace it pushes to and the RAM policy
# that may push there only (registry.py).
OUT_TEAM_REGISTRY_NAMESPACES = "teamRegistryNamespaces"
OUT_TEAM_PUSH_POLICIES = "teamRegistryPushPolicies"
# kubeconfig mode with trainstack:ossBuckets: team -> the RAM policy (JSON) its AccessKey's RAM
# user needs, naming only <bucket>/<team>/ of those buckets (infra/platform/osspolicy.py).
OUT_TEAM_OSS_POLICIES = "teamOssPolicies"
OSS_AUTH_RRSA = "rrsa"
OSS_AUTH_SECRET = "secret"
OSS_AUTH_NONE = "none"


def priority_class_name(priority: int) -> str:
    """The PriorityClass a run of this priority is scheduled with."""
    if priority not in PRIORITIES:
        raise ValueError(f"priority must be in 1..9, got {priority}")
    return f"trainstack-priority-{priority}"


def priority_class_value(priority: int) -> int:
    """Spaced by 1000 so an operator can slot system classes in between without renumbering."""
    return 1000 * priority


# --- PersistentVolumes a run renders (trainstack.render.storage) ------------------------------
PV_NAMESPACE_SEPARATOR = "."
"""Separates the team namespace from the rest of a rendered PV's name: ``<namespace>.<claim>``.
A namespace is a DNS label and cannot contain ``.``, while a PV's name is a DNS subdomain that may
(Kubernetes "Object Names and IDs"), so the namespace a PV belongs to is exactly the text before
its first ``.``: no team's prefix is another team's (``nlp-`` was a prefix of ``nlp-x``'s PVs).
The platform's per-team volume guard (trainstack.infra.platform.teamaccess) checks this prefix."""

MAX_DNS_LABEL = k8snames.MAX_LABEL
MAX_DNS_SUBDOMAIN = 253


def pv_name(namespace: str, rest: str) -> str:
    """The name of a PersistentVolume a run in ``namespace`` renders: ``<namespace>.<rest>``,
    ``rest`` being the name of the claim it is pre-bound to (a DNS label, so the whole name is a
    DNS subdomain of two labels, at most 127 characters)."""
    for what, label in (("namespace", namespace), ("rest", rest)):
        if not label or len(label) > MAX_DNS_LABEL or PV_NAMESPACE_SEPARATOR in label:
            raise ValueError(f"{what} {label!r} is not a DNS label")
    return f"{namespace}{PV_NAMESPACE_SEPARATOR}{rest}"


# Stack names: what plan and deploy call the platform and run stacks (PLATFORM_STACK_ENV: a
# template; {env} is replaced).


def run_stack_name(env: str, namespace: str, run: str) -> str:
    """One stack per (environment, team namespace, run): ``<env>.<namespace>.<run>``. Two teams
    may name a run alike; each gets its own stack (a stack name allows letters, digits, ``-``,
    ``_`` and ``.``; a namespace is a DNS label, a run name [A-Za-z0-9_-])."""
    return f"{env}.{namespace}.{run}"


def platform_stack_name(env: str) -> str:
    """The platform stack a run of ``env`` references (same backend as the run stacks)."""
    template = os.environ.get(PLATFORM_STACK_ENV, f"organization/{PLATFORM_PROJECT}/{{env}}")
    return template.format(env=env)


RUNNER_ACCOUNT = "trainstack-runner"
"""Each team namespace's ServiceAccount, whose Role is what the team may do there
(infra/platform/teamaccess.py); the scoped kubeconfigs log in as it."""
SCOPE_TOKEN_ANCHOR = "trainstack-runner-scope"
"""The Secret (no data) in each team namespace that a published scope's token is bound to: the
API server accepts the token only while this very object exists, so ``scope publish`` deleting
and recreating it revokes the previous scope's token at once (deploy/scopetoken.py)."""

# A team's secrets scope (deploy/scope.py): a stack of its own per environment and team.
SCOPES_PROJECT = "trainstack-scopes"


def scope_stack_name(env: str, team: str) -> str:
    template = os.environ.get(SCOPE_STACK_ENV, f"organization/{SCOPES_PROJECT}/{{env}}.{{team}}")
    return template.format(env=env, team=team)


ADMISSION_NAMESPACE = "trainstack-admission"
"""Where the platform keeps its admission policies' parameters (ConfigMaps): a namespace no team
holds a right in, so no team can loosen its own guard; no team namespace may take its name."""
# Set by the API server on every namespace since Kubernetes 1.21 (Kubernetes docs, "Namespaces"):
# what selects one namespace by its name (the pod guard, the NetworkPolicy's DNS rule).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# --- Label and annotation keys, and the GPU resource -------------------------------------------
# What the platform puts on nodes and namespaces and the renderer, the run program and the
# policy rules select on: a key spelled twice is a selector that matches nothing.
LABEL_PREFIX = "trainstack.dev/"
RUN_LABEL = LABEL_PREFIX + "run"  # every object a run renders: its job's name
ROLE_LABEL = LABEL_PREFIX + "role"  # a replica's pod: its role
TAG_PREFIX = "tag.trainstack.dev/"  # a run's tags, one label (or annotation) each
POOL_LABEL = LABEL_PREFIX + "pool"  # ack node pools: the pool's name
ACCELERATOR_LABEL = LABEL_PREFIX + "accelerator"  # ack node pools: gpu or cpu
GPU_TYPE_LABEL = LABEL_PREFIX + "gpu-type"
CAPACITY_LABEL = LABEL_PREFIX + "capacity"  # ack node pools: spot or on-demand; the spot taint
TEAM_NAMESPACE_LABEL = LABEL_PREFIX + "team"  # what makes a namespace a team's
SPEC_HASH_ANNOTATION = LABEL_PREFIX + "spec-hash"  # the run program's digest of a manifest
# The KubeDL CRDs the platform installs: the sha256 of their source, or why there is none.
KUBEDL_SOURCE_ANNOTATION = LABEL_PREFIX + "source-sha256"
# The manager of the runtime patch a rendered TrainJob carries (trainstack.trainer.trainjob): a
# domain-prefixed path, the key Trainer's patches are listed by.
TRAINJOB_PATCH_MANAGER = LABEL_PREFIX + "render"
KUBEDL_SCHEMA_ANNOTATION = LABEL_PREFIX + "schema"
# NVIDIA's device plugin's extended resource: what a GPU replica requests, and the taint key
# of the platform's GPU node pools.
GPU_RESOURCE = "nvidia.com/gpu"

PLAN_UNKNOWN = "(known after apply)"
"""What a plan shows, and the policy context reads, for a value only a deploy will know."""
