"""Both modes: credentials scoped to one team namespace, so run stacks need no admin kubeconfig.

Per team: a ServiceAccount ``trainstack-runner``, a namespaced Role and RoleBinding with exactly
what a run stack and ``status``/``logs``/``wait`` do there. Its tokens are minted, bound and
expiring, by ``trainstack scope publish`` (deploy/scopetoken.py). Unless
``trainstack:legacyTeamTokens`` is false, also a non-expiring token Secret
(``kubernetes.io/service-account-token``) for platforms that publish no scopes, and the output
``teamKubeconfigs`` (``{namespace: kubeconfig}``, a secret output): the cluster's endpoint and CA,
read from the admin kubeconfig, plus that token. The run program and the ``kubernetes`` client
prefer it (``trainstack/infra/run/program.py``, ``trainstack/deploy/kube.py``).

PersistentVolumes are cluster-scoped, and a run's ``oss://``/``nas://`` bindings render static
PVs: one ClusterRole ``trainstack-runner-volumes`` (persistentvolumes only) is bound to every
team's ServiceAccount with a ClusterRoleBinding. That is the one cluster-wide right a team holds,
and a ValidatingAdmissionPolicy per team narrows it (volumeguard.py, volumepolicy.py): a team's
runner may manage only PVs named ``<namespace>.…``, pre-bound to a claim in its namespace, whose
source has exactly the renderer's shape on the team's own folder of the platform's storage.
docs/tenancy.md says what stays visible.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainstack.infra.platform.kubeconfigs import Endpoint as Endpoint
from trainstack.infra.platform.kubeconfigs import admin_kubeconfig_text, scoped_kubeconfig
from trainstack.infra.platform.kubeconfigs import endpoint_of as endpoint_of
from trainstack.infra.platform.kubedl_source import crd_resource
from trainstack.infra.platform.volumeguard import GuardShape, TeamVolumes
from trainstack.infra.platform.volumepolicy import admission_namespace, volume_guard
from trainstack.platformnames import RUNNER_ACCOUNT
from trainstack.trainer.jobset import JOBSET
from trainstack.trainer.runtimes import TRAINJOB_API_VERSION

COMPONENT = "trainstack:platform:TeamAccess"
RUNNER = RUNNER_ACCOUNT
VOLUMES_ROLE = "trainstack-runner-volumes"
TOKEN_SECRET = "trainstack-runner-token"
TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"

# trainstack.trainer.runtimes.TRAINJOB_API_VERSION's and trainstack.trainer.jobset.JOBSET's groups.
TRAINJOB_GROUP = TRAINJOB_API_VERSION.split("/")[0]
JOBSET_GROUP = JOBSET.api_version.split("/")[0]
_CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]
_READ = ["get", "list", "watch"]
_LABELS = {"app.kubernetes.io/managed-by": "trainstack"}


def kubedl_resources(workloads: Sequence[str]) -> dict[str, list[str]]:
    """API group -> the plurals of the enabled KubeDL kinds (from their CRD file names)."""
    groups: dict[str, list[str]] = {}
    for kind in workloads:
        group, plural = crd_resource(kind)
        groups.setdefault(group, []).append(plural)
    return {g: sorted(p) for g, p in sorted(groups.items())}


def runner_rules(
    workloads: Sequence[str], *, trainjobs: bool = False, queues: bool = False
) -> list[k8s.rbac.v1.PolicyRuleArgsDict]:
    """What a run stack creates in its namespace (trainstack.infra.run.program's kinds) and what
    status/logs/wait read. ``pods/exec`` is here because the MPI launcher's Role grants it
    (trainstack.render.context): Kubernetes lets a subject create a Role only with rights it
    holds itself. ``trainjobs`` (a Trainer environment): TrainJobs as the KubeDL kinds (Pulumi's
    server-side apply creates and updates with PATCH), the namespaced TrainingRuntimes an MPI run
    renders of its own (trainstack.render.mpiruntime; this Role is the team namespace's, so only
    there, and the pod guard checks their pod templates as a pod's), and the JobSets Trainer
    makes of them, read only; never the ClusterTrainingRuntimes (cluster-scoped, the
    platform's)."""
    rules: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
        {"api_groups": [group], "resources": plurals, "verbs": _CRUD}
        for group, plurals in kubedl_resources(workloads).items()
    ]
    if trainjobs:
        rules += [
            {"api_groups": [TRAINJOB_GROUP], "resources": ["trainjobs"], "verbs": _CRUD},
            {"api_groups": [TRAINJOB_GROUP], "resources": ["trainingruntimes"], "verbs": _CRUD},
            {"api_groups": [JOBSET_GROUP], "resources": ["jobsets"], "verbs": _READ},
        ]
    if queues:
        # Kueue: the team's LocalQueue and Workloads, and where its pending ones stand
        # (`status`, `trainstack queue`), read only.
        from trainstack.infra.platform.kueue_release import TEAM_QUEUE_RULES

        rules += list(TEAM_QUEUE_RULES)
    rules += [
        {
            "api_groups": [""],
            "resources": [
                "configmaps",
                "secrets",
                "services",
                "serviceaccounts",
                "persistentvolumeclaims",
            ],
            "verbs": _CRUD,
        },
        {"api_groups": [""], "resources": ["pods", "pods/log", "events"], "verbs": _READ},
        {"api_groups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
        # The gang schedulers' PodGroups KubeDL makes for the team's jobs: status and wait read
        # why a gang waits (deploy/waiting.py).
        {
            "api_groups": ["scheduling.sigs.k8s.io", "scheduling.volcano.sh"],
            "resources": ["podgroups"],
            "verbs": _READ,
        },
        {"api_groups": ["batch"], "resources": ["jobs"], "verbs": _CRUD},
        {
            "api_groups": ["rbac.authorization.k8s.io"],
            "resources": ["roles", "rolebindings"],
            "verbs": _CRUD,
        },
    ]
    return rules


VOLUME_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {"api_groups": [""], "resources": ["persistentvolumes"], "verbs": _CRUD}
]


def guard_match(namespace: str) -> str:
    """CEL: the request comes from this team's runner (its ServiceAccount's user name)."""
    return f"request.userInfo.username == 'system:serviceaccount:{namespace}:{RUNNER}'"


class TeamAccess(pulumi.ComponentResource):
    """Per team: ServiceAccount, Role, RoleBinding, (legacy) token Secret; one ClusterRole for
    PVs."""

    tokens: dict[str, pulumi.Output[str | None]]  # namespace -> the decoded token (secret)

    def __init__(
        self,
        name: str,
        namespaces: Mapping[str, k8s.core.v1.Namespace],
        workloads: Sequence[str],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        trainjobs: bool = False,
        queues: bool = False,
        team_volumes: Mapping[str, tuple[GuardShape, pulumi.Output[TeamVolumes]]],
        legacy_tokens: bool = True,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        volumes = k8s.rbac.v1.ClusterRole(
            "runner-volumes",
            metadata={"name": VOLUMES_ROLE, "labels": _LABELS},
            rules=VOLUME_RULES,
            opts=child,
        )
        rules = runner_rules(workloads, trainjobs=trainjobs, queues=queues)
        params_home = admission_namespace(child)
        self.tokens = {}
        for team, ns in namespaces.items():
            namespace = ns.metadata.name
            meta: k8s.meta.v1.ObjectMetaArgsDict = {
                "name": RUNNER,
                "namespace": namespace,
                "labels": _LABELS,
            }
            account = k8s.core.v1.ServiceAccount(f"runner-{team}", metadata=meta, opts=child)
            role = k8s.rbac.v1.Role(f"runner-role-{team}", metadata=meta, rules=rules, opts=child)
            subject: list[k8s.rbac.v1.SubjectArgsDict] = [
                {"kind": "ServiceAccount", "name": RUNNER, "namespace": namespace}
            ]
            k8s.rbac.v1.RoleBinding(
                f"runner-binding-{team}",
                metadata=meta,
                subjects=subject,
                role_ref={
                    "api_group": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": role.metadata.name,
                },
                opts=child,
            )
            k8s.rbac.v1.ClusterRoleBinding(
                f"runner-volumes-{team}",
                metadata={"name": f"{VOLUMES_ROLE}-{team}", "labels": _LABELS},
                subjects=subject,
                role_ref={
                    "api_group": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": volumes.metadata.name,
                },
                opts=child,
            )
            shape, values = team_volumes[team]
            volume_guard(team, shape, guard_match(shape.namespace), values, params_home, child)
            if legacy_tokens:
                self.tokens[team] = _legacy_token(team, namespace, account, child)
        self.register_outputs({})


def _legacy_token(
    team: str,
    namespace: pulumi.Output[str],
    account: k8s.core.v1.ServiceAccount,
    child: pulumi.ResourceOptions,
) -> pulumi.Output[str | None]:
    """The team's non-expiring token: a ``kubernetes.io/service-account-token`` Secret, kept for
    platforms whose teams do not deploy from published scopes (trainstack:legacyTeamTokens).
    Deleting the Secret invalidates the token at once; ``pulumi up`` then makes a new one."""
    # pulumi-kubernetes waits until the token controller has filled in a token Secret
    # (pulumi/pulumi-kubernetes#2048), so ``data.token`` is known once it is created.
    # Its data is a credential: encrypted in state, never plain.
    secret = k8s.core.v1.Secret(
        f"runner-token-{team}",
        metadata={
            "name": TOKEN_SECRET,
            "namespace": namespace,
            "labels": _LABELS,
            "annotations": {SA_NAME_ANNOTATION: RUNNER},
        },
        type=TOKEN_TYPE,
        opts=pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(depends_on=[account], additional_secret_outputs=["data"]),
        ),
    )
    return pulumi.Output.secret(secret.data.apply(_token))


def _token(data: Mapping[str, str] | None) -> str | None:
    raw = (data or {}).get("token")
    return base64.b64decode(raw).decode() if raw else None


def team_kubeconfigs(
    namespaces: Mapping[str, pulumi.Input[str]],
    tokens: Mapping[str, pulumi.Output[str | None]],
    admin: pulumi.Input[str | None],
    context: str | None,
) -> pulumi.Output[dict[str, str]]:
    """``{namespace: kubeconfig}`` as one secret output; a team whose token or cluster endpoint
    is unknown is left out (its runs then use the admin kubeconfig)."""
    teams = sorted(tokens)

    def build(values: list[Any]) -> dict[str, str]:
        admin_text, *rest = values
        found = (
            None if admin_text is None else endpoint_of(str(admin_text[0]), context, admin_text[1])
        )
        out: dict[str, str] = {}
        for namespace, token in zip(rest[: len(teams)], rest[len(teams) :], strict=True):
            if found is not None and token:
                out[str(namespace)] = scoped_kubeconfig(found, str(namespace), str(token))
        return out

    admin_out = pulumi.Output.from_input(admin).apply(admin_kubeconfig_text)
    return pulumi.Output.secret(
        pulumi.Output.all(
            admin_out, *[namespaces[t] for t in teams], *[tokens[t] for t in teams]
        ).apply(build)
    )
