"""The platform exports what ``pod-fits-node-pool`` needs: each pool's labels, taints and one
node's CPU, memory and GPUs."""

from __future__ import annotations

from pathlib import Path

from trainstack.infra.platform.instancetypes import shape, smallest
from trainstack.plan.service import plan_platform

REPO = Path(__file__).resolve().parents[2]


def test_ack_exports_node_pools_with_their_shapes() -> None:
    outputs = plan_platform("ack-dev", REPO).outputs
    pools = {p["name"]: p for p in outputs["nodePools"]}
    assert set(pools) == {"system", "cpu", "a10", "v100", "spot"}
    a10 = pools["a10"]
    assert (a10["cpu"], a10["memory"], a10["gpus"]) == (8, "30Gi", 1)
    assert a10["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert a10["labels"]["trainstack.dev/gpu-type"] == "A10"
    # the cpu pool's two types: the smaller one bounds what a pod may ask
    assert (pools["cpu"]["cpu"], pools["cpu"]["memory"], pools["cpu"]["gpus"]) == (8, "32Gi", 0)
    assert {t["key"] for t in pools["spot"]["taints"]} == {
        "nvidia.com/gpu",
        "trainstack.dev/capacity",
    }


def test_kubeconfig_mode_does_not_claim_to_know_its_nodes() -> None:
    assert "nodePools" not in plan_platform("local", REPO).outputs


def test_instance_shapes() -> None:
    assert shape("ecs.g7.2xlarge") is not None and shape("ecs.g7.2xlarge") == shape(
        "ecs.g6.2xlarge"
    )
    assert shape("ecs.c7.4xlarge") is not None and (
        shape("ecs.c7.4xlarge").cpu,  # type: ignore[union-attr]
        shape("ecs.c7.4xlarge").memory_gib,
    ) == (16, 32)  # type: ignore[union-attr]
    assert shape("ecs.ebmgn7ex.32xlarge") is None
    assert smallest(("ecs.g7.2xlarge", "ecs.ebmgn7ex.32xlarge")) is None
