"""ack: the CPU pool, the GPU pools (tainted so only GPU jobs land there) and an optional spot pool.

Every pool autoscales between its min and max; ``desired_size`` is left unset because ACK rejects
it on a pool whose size the autoscaler owns.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_alicloud as alicloud

from trainstack.infra.platform.config_ack import GPU_TAINT, SPOT_TAINT, AckConfig, PoolConfig

POOL_LABEL = "trainstack.dev/pool"
ACCELERATOR_LABEL = "trainstack.dev/accelerator"
GPU_TYPE_LABEL = "trainstack.dev/gpu-type"
CAPACITY_LABEL = "trainstack.dev/capacity"


def pool_labels(pool: PoolConfig) -> dict[str, str]:
    labels = {POOL_LABEL: pool.name, ACCELERATOR_LABEL: "gpu" if pool.gpu else "cpu",
              CAPACITY_LABEL: "spot" if pool.spot else "on-demand"}
    if pool.gpu_type:
        labels[GPU_TYPE_LABEL] = pool.gpu_type
    return labels


def build_node_pools(ack: AckConfig, cluster_id: pulumi.Input[str],
                     vswitch_ids: Sequence[pulumi.Input[str]], opts: pulumi.ResourceOptions
                     ) -> list[alicloud.cs.NodePool]:
    pools = [ack.cpu_pool, *ack.gpu_pools, *([ack.spot_pool] if ack.spot_pool else [])]
    return [_pool(p, cluster_id, vswitch_ids, opts) for p in pools]


def _pool(pool: PoolConfig, cluster_id: pulumi.Input[str],
          vswitch_ids: Sequence[pulumi.Input[str]], opts: pulumi.ResourceOptions
          ) -> alicloud.cs.NodePool:
    taints: list[alicloud.cs.NodePoolTaintArgsDict] = [
        {"key": key, "value": value, "effect": effect}
        for (key, value, effect), applies in ((GPU_TAINT, pool.gpu), (SPOT_TAINT, pool.spot))
        if applies]
    strategy: str | None = None
    limits: list[alicloud.cs.NodePoolSpotPriceLimitArgsDict] | None = None
    if pool.spot and pool.spot_price_limit:
        strategy = "SpotWithPriceLimit"
        limits = [{"instance_type": t, "price_limit": pool.spot_price_limit}
                  for t in pool.instance_types]
    elif pool.spot:
        strategy = "SpotAsPriceGo"  # no cap: pay the market price, never above on-demand
    return alicloud.cs.NodePool(
        f"pool-{pool.name}",
        node_pool_name=pool.name,
        cluster_id=cluster_id,
        vswitch_ids=list(vswitch_ids),
        instance_types=list(pool.instance_types),
        labels=[{"key": k, "value": v} for k, v in sorted(pool_labels(pool).items())],
        taints=taints,
        scaling_config={"enable": True, "min_size": pool.min_size, "max_size": pool.max_size,
                        "type": "spot" if pool.spot else ("gpu" if pool.gpu else "cpu")},
        system_disk_category="cloud_essd",
        system_disk_size=pool.system_disk_size,
        spot_strategy=strategy,
        spot_price_limits=limits,
        opts=opts,
    )
