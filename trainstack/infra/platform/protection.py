"""What holds data is protected, in one place: a transformation every component carries.

``protect`` makes Pulumi refuse to delete or replace the resource (a replacement — say a changed
``nasStorageType`` — fails instead of recreating the NAS empty); ``retainOnDelete`` leaves it in
the cloud or cluster if it is ever removed from the program on purpose (``pulumi state
unprotect`` first). Stateful means: the NAS file system, the buckets, the registry (its instance,
namespace and repositories hold the images), KubeDL's CRDs (deleting one deletes every job of
that kind), team namespaces (their runs) and the artifact claims; and what cannot be replaced
without breaking those: the NAS mount target, the VPC and vSwitches, the cluster, the node key
pair and the RAM roles. Nothing else sets either option:
``tests/infra`` checks that the plan's protected set is exactly this one.

It is a (legacy) ``transformations`` callback, applied in this process as each resource is
constructed and inherited by a component's children, rather than an engine-side ``transforms``
one: the offline plan and the tests under Pulumi's mocks then see exactly the options `pulumi up`
registers.
"""

from __future__ import annotations

import pulumi

from trainstack.platformnames import TEAM_NAMESPACE_LABEL

STATEFUL_TYPES = frozenset(
    {
        "alicloud:nas/fileSystem:FileSystem",
        "alicloud:oss/bucket:Bucket",
        "alicloud:cr/registryEnterpriseInstance:RegistryEnterpriseInstance",
        "alicloud:cs/registryEnterpriseNamespace:RegistryEnterpriseNamespace",
        "alicloud:cs/registryEnterpriseRepo:RegistryEnterpriseRepo",
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "kubernetes:core/v1:PersistentVolumeClaim",
        # A Trainer environment's runtimes: every TrainJob names one, and one deleted leaves its
        # TrainJobs unreconciled (trainer_runtimes.py).
        "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime",
        # What the provider can only change by replacing it, and whose replacement breaks what
        # depends on it: a new NAS mount target has a new domain (the NAS StorageClass and every
        # bound NAS PV name the old one); a new VPC or vSwitch (a changed vpcCidr, vswitchCidrs or
        # zones) takes the cluster and its nodes with it; the cluster's service_cidr "cannot be
        # modified after creation" and slb_internet_enabled/addons "only work for Create"
        # (cs/managed_kubernetes.py), and its deletion_protection stops the cloud API's delete,
        # not a Pulumi replacement planned before it; the key pair logs every node in; the RAM
        # roles are what OSS volumes mount as. With `protect`, `pulumi preview` refuses any plan
        # that would replace one of them, before anything is touched.
        "alicloud:nas/mountTarget:MountTarget",
        "alicloud:vpc/network:Network",
        "alicloud:vpc/switch:Switch",
        "alicloud:cs/managedKubernetes:ManagedKubernetes",
        "alicloud:ecs/ecsKeyPair:EcsKeyPair",
        "alicloud:ram/role:Role",
    }
)


def _is_stateful(args: pulumi.ResourceTransformationArgs) -> bool:
    if args.type_ in STATEFUL_TYPES:
        return True
    # Namespaces are stateful only when they hold runs: a team's, not KubeDL's own.
    if args.type_ == "kubernetes:core/v1:Namespace":
        metadata = args.props.get("metadata") or {}
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        return isinstance(labels, dict) and TEAM_NAMESPACE_LABEL in labels
    return False


def protect_stateful(
    args: pulumi.ResourceTransformationArgs,
) -> pulumi.ResourceTransformationResult | None:
    if not _is_stateful(args):
        return None
    return pulumi.ResourceTransformationResult(
        props=args.props,
        opts=pulumi.ResourceOptions.merge(
            args.opts, pulumi.ResourceOptions(protect=True, retain_on_delete=True)
        ),
    )


def component_opts(**kwargs: object) -> pulumi.ResourceOptions:
    """Options for a top-level component: carries the transformation to all its children."""
    return pulumi.ResourceOptions(transformations=[protect_stateful], **kwargs)  # type: ignore[arg-type]
