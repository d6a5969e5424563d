"""ack: the node pools and the cluster autoscaler that sizes them.

- ``system``: a fixed number of nodes, never autoscaled, tainted ``CriticalAddonsOnly`` so no
  training pod lands there. ACK labels autoscaled nodes
  ``k8s.aliyun.com=true``, which keeps system components such as CoreDNS off them, so without a
  fixed pool they have nowhere to run.
- ``cpu`` and the GPU pools autoscale between min and max; GPU pools are tainted so only GPU jobs
  land there. ``desired_size`` is left unset on them: the autoscaler owns their size.
- the optional spot pool is tainted as spot, and as GPU only when it holds GPUs
  (``spotPool.gpuType``), so CPU spot runs (which tolerate the spot taint, not the GPU one) fit.

Every pool's nodes log in with the platform's key pair (``trainstack:nodePublicKey``):
``cs/node_pool.py`` requires one of ``password``, ``key_name`` or ``kms_encrypted_password``.
``cs.AutoscalingConfig`` sets how the autoscaler behaves (pulumi_alicloud cs/autoscaling_config.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import (
    GPU_TAINT,
    SPOT_TAINT,
    SYSTEM_TAINT,
    AckConfig,
    PoolConfig,
)
from trainstack.infra.platform.instancetypes import smallest
from trainstack.platformnames import ACCELERATOR_LABEL, CAPACITY_LABEL, GPU_TYPE_LABEL, POOL_LABEL

COMPONENT = "trainstack:platform:NodePools"


def pool_labels(pool: PoolConfig) -> dict[str, str]:
    labels = {
        POOL_LABEL: pool.name,
        ACCELERATOR_LABEL: "gpu" if pool.gpu else "cpu",
        CAPACITY_LABEL: "spot" if pool.spot else "on-demand",
    }
    if pool.gpu_type:
        labels[GPU_TYPE_LABEL] = pool.gpu_type
    return labels


def pool_taints(pool: PoolConfig) -> list[alicloud.cs.NodePoolTaintArgsDict]:
    system = pool.fixed_size is not None
    return [
        {"key": key, "value": value, "effect": effect}
        for (key, value, effect), applies in (
            (SYSTEM_TAINT, system),
            (GPU_TAINT, pool.gpu),
            (SPOT_TAINT, pool.spot),
        )
        if applies
    ]


def pool_shapes(ack: AckConfig) -> list[dict[str, object]]:
    """The ``nodePools`` output: per pool its labels, taints, instance types, the most nodes it
    may have, and one node's CPU, memory and GPUs (the smallest of its instance types; ``None``
    when a type's shape is not known)."""
    out: list[dict[str, object]] = []
    for pool in ack.pools:
        s = smallest(pool.instance_types)
        out.append(
            {
                "name": pool.name,
                "labels": pool_labels(pool),
                "taints": [dict(t) for t in pool_taints(pool)],
                "instanceTypes": list(pool.instance_types),
                "maxSize": pool.max_size if pool.fixed_size is None else pool.fixed_size,
                "cpu": s.cpu if s else None,
                "memory": f"{s.memory_gib}Gi" if s else None,
                "gpus": s.gpus if s else None,
            }
        )
    return out


class NodePools(pulumi.ComponentResource):
    pools: list[alicloud.cs.NodePool]

    def __init__(
        self,
        name: str,
        ack: AckConfig,
        cluster_id: pulumi.Input[str],
        vswitch_ids: Sequence[pulumi.Input[str]],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        key_name: pulumi.Input[str] | None = None
        if ack.node_public_key is not None:
            key_pair = alicloud.ecs.EcsKeyPair(
                "node-key-pair",
                key_pair_name=f"{ack.cluster_name}-nodes",
                public_key=ack.node_public_key,
                opts=child,
            )
            key_name = key_pair.key_pair_name
        self.pools = [_pool(p, cluster_id, vswitch_ids, key_name, child) for p in ack.pools]
        alicloud.cs.AutoscalingConfig(
            "autoscaler",
            cluster_id=cluster_id,
            scaler_type="cluster-autoscaler",
            # Fill the pool whose nodes would be left least idle; scale-down after 10 idle minutes
            # except on GPU nodes still half used (cs/autoscaling_config.py defaults otherwise).
            expander="least-waste",
            scale_down_enabled=True,
            unneeded_duration="10m",
            utilization_threshold="0.5",
            gpu_utilization_threshold="0.5",
            # Training pods write emptyDir scratch; that must not pin a node forever.
            skip_nodes_with_local_storage=False,
            scale_up_from_zero=True,
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=list(self.pools))
            ),
        )
        self.register_outputs({})


def _pool(
    pool: PoolConfig,
    cluster_id: pulumi.Input[str],
    vswitch_ids: Sequence[pulumi.Input[str]],
    key_name: pulumi.Input[str] | None,
    opts: pulumi.ResourceOptions,
) -> alicloud.cs.NodePool:
    strategy: str | None = None
    limits: list[alicloud.cs.NodePoolSpotPriceLimitArgsDict] | None = None
    if pool.spot and pool.spot_price_limit:
        strategy = "SpotWithPriceLimit"
        limits = [
            {"instance_type": t, "price_limit": pool.spot_price_limit} for t in pool.instance_types
        ]
    elif pool.spot:
        strategy = "SpotAsPriceGo"  # no cap: pay the market price, never above on-demand
    desired: str | None = None
    scaling: alicloud.cs.NodePoolScalingConfigArgsDict | None = None
    if pool.fixed_size is not None:
        # cs/node_pool.py: desired_size is a string, "Number of expected nodes in the node pool".
        desired = str(pool.fixed_size)
    else:
        scaling = {
            "enable": True,
            "min_size": pool.min_size,
            "max_size": pool.max_size,
            "type": "spot" if pool.spot else ("gpu" if pool.gpu else "cpu"),
        }
    return alicloud.cs.NodePool(
        f"pool-{pool.name}",
        node_pool_name=pool.name,
        cluster_id=cluster_id,
        vswitch_ids=list(vswitch_ids),
        instance_types=list(pool.instance_types),
        labels=[{"key": k, "value": v} for k, v in sorted(pool_labels(pool).items())],
        taints=pool_taints(pool),
        system_disk_category="cloud_essd",
        system_disk_size=pool.system_disk_size,
        spot_strategy=strategy,
        spot_price_limits=limits,
        key_name=key_name,
        desired_size=desired,
        scaling_config=scaling,
        opts=opts,
    )
