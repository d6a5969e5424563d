"""ack: the registry component images (and KubeDL's mirrored image) are pulled from.

``trainstack:registryType: acr-enterprise`` (default) creates an ACR Enterprise instance with
its namespace and repositories, and links it to the cluster's VPC so nodes pull over the VPC
domain — all through the API, no console step. The personal edition's ``cr.Namespace`` and
``cr.Repo`` are not used: they are deprecated in the SDK and need the console set up first.
``external`` brings your own registry (``trainstack:registryServer``); nothing is created.
The instance, namespace and repositories hold images, so ``protection.py`` protects them.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import AckConfig
from trainstack.infra.platform.network import Network

COMPONENT = "trainstack:platform:Registry"


class Registry(pulumi.ComponentResource):
    namespace: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        ack: AckConfig,
        net: Network,
        password: pulumi.Input[str],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
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
        self.register_outputs({"namespace": self.namespace})
