"""ack: the registry component images (and KubeDL's mirrored image) are pulled from.

``trainstack:registryType: acr-enterprise`` (default) creates an ACR Enterprise instance with
its namespace and repositories, and links it to the cluster's VPC so nodes pull over the VPC
domain — all through the API, no console step. The personal edition's ``cr.Namespace`` and
``cr.Repo`` are not used: they are deprecated in the SDK and need the console set up first.
``external`` brings your own registry (``trainstack:registryServer``); nothing is created.
The instance, namespace and repositories hold images, so ``protection.py`` protects them.

Who may push what, and how nodes pull:

- The platform's namespace (``registryNamespace``) holds the shared images; only the identity
  ``pulumi up`` runs as (and whoever the platform team grants) pushes there.
- Each team gets a namespace of its own, ``<registryNamespace>-<team>``, and a RAM policy
  ``<instance>-push-<team>`` that may push and pull only there (ACR's ARN
  ``acs:cr:$regionid:$accountid:repository/$instanceid/$namespacename/*``, "RAM authentication
  rules"), for the platform team to attach to the team's CI identity (output
  ``teamRegistryPushPolicies``). One team can no longer overwrite an image another team's run
  executes.
- Pods pull through ACK's managed ``aliyun-acr-credential-helper``: it fetches short-lived tokens
  with ``AliyunCSManagedAcrRole`` (cr:GetAuthorizationToken, cr:ListInstanceEndpoint,
  cr:PullRepository: pull only), keeps them in a Secret it refreshes, and attaches that Secret to
  the ServiceAccounts of the namespaces it watches (ACK "Pull images without a secret", managed
  edition: AcrInstanceInfo, watchNamespace, serviceAccount, expiringThreshold). The instance's
  login password, which can push, therefore never enters the cluster: no team namespace holds a
  ``trainstack-registry`` Secret, and rendered pods name no imagePullSecrets (the helper does not
  work beside a workload's own imagePullSecrets).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig, team_registry_namespace
from trainstack.infra.platform.network import Network

COMPONENT = "trainstack:platform:Registry"
CREDENTIAL_HELPER = "managed-aliyun-acr-credential-helper"
# How long before a pull token expires the helper renews it (its documented default).
TOKEN_RENEWAL = "15m"


def push_policy_document(instance_id: str, namespace: str) -> str:
    """A RAM policy that may push and pull in one ACR namespace of one instance, and nothing
    in any other namespace (GetAuthorizationToken is what ``docker login`` with a RAM identity
    calls; it takes no resource)."""
    repos = [
        f"acs:cr:*:*:repository/{instance_id}/{namespace}",
        f"acs:cr:*:*:repository/{instance_id}/{namespace}/*",
    ]
    return json.dumps(
        {
            "Version": "1",
            "Statement": [
                {"Effect": "Allow", "Action": ["cr:GetAuthorizationToken"], "Resource": "*"},
                {
                    "Effect": "Allow",
                    "Action": [
                        "cr:PullRepository",
                        "cr:PushRepository",
                        "cr:GetRepository",
                        "cr:ListRepository*",
                        "cr:CreateRepository",
                    ],
                    "Resource": repos,
                },
            ],
        },
        sort_keys=True,
    )


def credential_helper_config(instance_id: str, region: str, namespaces: Sequence[str]) -> str:
    """The managed credential helper's configuration: this instance, these namespaces (never
    ``all``: system namespaces pull their own way), every ServiceAccount in them."""
    return json.dumps(
        {
            "AcrInstanceInfo": [{"InstanceId": instance_id, "regionId": region}],
            "watchNamespace": ",".join(sorted(namespaces)),
            "serviceAccount": "*",
            "expiringThreshold": TOKEN_RENEWAL,
        },
        sort_keys=True,
    )


class Registry(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    team_push_policies: dict[str, pulumi.Output[str]]  # team -> RAM policy name
    credential_helper: alicloud.cs.KubernetesAddon

    def __init__(
        self,
        name: str,
        ack: AckConfig,
        net: Network,
        password: pulumi.Input[str],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster_id: pulumi.Input[str],
        teams: Sequence[str],
        pulling_namespaces: Sequence[str],
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        # cr/registry_enterprise_instance.py: payment_type "Subscription" (prepaid, with period);
        # the login password is the one the pull secrets use (trainstack:registryPassword).
        instance = alicloud.cr.RegistryEnterpriseInstance(
            "acr-instance",
            instance_name=ack.registry_instance,
            instance_type=ack.registry_edition,
            payment_type="Subscription",
            period=12,
            renewal_status="AutoRenewal",
            renew_period=12,
            image_scanner="ACR",
            password=password,
            opts=child,
        )
        # cr/vpc_endpoint_linked_vpc.py: module "Registry", with a PrivateZone record, so the VPC
        # domain <instance>-registry-vpc.<region>.cr.aliyuncs.com resolves inside the VPC.
        alicloud.cr.VpcEndpointLinkedVpc(
            "acr-vpc-link",
            instance_id=instance.id,
            vpc_id=net.vpc.id,
            vswitch_id=net.vswitches[0].id,
            module_name="Registry",
            enable_create_dns_record_in_pvzt=True,
            opts=child,
        )
        if ack.registry_allowed_cidrs:
            # A new Enterprise instance admits no traffic until an access mode is enabled (ACR
            # "Network access control overview"); the VPC link above is one, this is the other:
            # pushes from outside the VPC (mirroring KubeDL's image, a CI runner's builds) over
            # <instance>-registry.<region>.cr.aliyuncs.com, from the listed blocks only
            # (pulumi_alicloud cr/internet_endpoint.py).
            alicloud.cr.InternetEndpoint(
                "acr-internet",
                instance_id=instance.id,
                entries=[
                    {"entry": block, "comment": "trainstack registryAllowedCidrs"}
                    for block in ack.registry_allowed_cidrs
                ],
                opts=child,
            )
        namespace = alicloud.cs.RegistryEnterpriseNamespace(
            "acr-namespace",
            instance_id=instance.id,
            name=ack.registry_namespace,
            auto_create=False,  # a typo in an image name must fail, not create a stray repository
            default_visibility="PRIVATE",
            opts=child,
        )
        for repo in ack.registry_repos:
            alicloud.cs.RegistryEnterpriseRepo(
                f"acr-{repo}",
                instance_id=instance.id,
                namespace=namespace.name,
                name=repo,
                repo_type="PRIVATE",
                summary=f"trainstack component images: {repo}",
                opts=child,
            )
        self.namespace = namespace.name
        self.team_push_policies = _team_push(ack, instance, teams, child)
        self.credential_helper = alicloud.cs.KubernetesAddon(
            "acr-credential-helper",
            cluster_id=cluster_id,
            name=CREDENTIAL_HELPER,
            config=instance.id.apply(
                lambda i: credential_helper_config(i, ack.region, pulling_namespaces)
            ),
            opts=child,
        )
        self.register_outputs({"namespace": self.namespace})


def _team_push(
    ack: AckConfig,
    instance: alicloud.cr.RegistryEnterpriseInstance,
    teams: Sequence[str],
    opts: pulumi.ResourceOptions,
) -> dict[str, pulumi.Output[str]]:
    out: dict[str, pulumi.Output[str]] = {}
    for team in teams:
        ns = alicloud.cs.RegistryEnterpriseNamespace(
            f"acr-namespace-{team}",
            instance_id=instance.id,
            name=team_registry_namespace(ack.registry_namespace, team),
            auto_create=True,  # a team's CI creates its repositories by pushing
            default_visibility="PRIVATE",
            opts=opts,
        )
        policy = alicloud.ram.Policy(
            f"acr-push-{team}",
            policy_name=f"{ack.registry_instance}-push-{team}",
            description=f"trainstack: push and pull only in ACR namespace of team {team}",
            policy_document=pulumi.Output.all(instance.id, ns.name).apply(
                lambda v: push_policy_document(str(v[0]), str(v[1]))
            ),
            opts=opts,
        )
        out[team] = policy.policy_name
    return out
