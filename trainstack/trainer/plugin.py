"""The variables a runtime's plugin gives one node, valued as Trainer v2.3.0 values them: what
a rendered TrainJob's node sees on a cluster, and a local run's node sees here
(trainstack.local.trainerjob). Which names each runtime injects, and the source of each, are in
trainstack.trainer.runtimes; the values:

- torch: `PET_NNODES` numNodes, `PET_NODE_RANK` the pod's completion index, `PET_MASTER_ADDR`
  node 0's address, `PET_MASTER_PORT` 29500, `PET_NPROC_PER_NODE` `auto` when the node asks for
  a GPU, else its CPUs rounded up, at least 1 (Trainer v2.3.0
  pkg/runtime/framework/plugins/torch/torch.go:100-177, calculateNumProcPerNode).
- XGBoost: `DMLC_TRACKER_URI` node 0's address, `DMLC_TRACKER_PORT` 29500, `DMLC_TASK_ID` the
  completion index, `DMLC_NUM_WORKER` numNodes times the GPUs a node asks for, or numNodes
  (pkg/runtime/framework/plugins/xgboost/xgboost.go:92-139).

A rendered node's command then exports the names KubeDL's kind sets from these
(`Runtime.kubedl_env`), so a script written for KubeDL runs unchanged: `kubedl_names` adds them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from trainstack.trainer.record import MLPolicy, Runtime
from trainstack.trainer.runtimes import (
    DMLC_NUM_WORKER,
    DMLC_TASK_ID,
    DMLC_TRACKER_PORT,
    DMLC_TRACKER_URI,
    PET_MASTER_ADDR,
    PET_MASTER_PORT,
    PET_NNODES,
    PET_NODE_RANK,
    PET_NPROC_PER_NODE,
)

# torch.go: numProcPerNode's default, kept for a node that asks for a GPU.
AUTO = "auto"


@dataclass(frozen=True)
class Node:
    """One node of the trainer job, as the plugin sees it."""

    num_nodes: int
    rank: int  # its completion index
    master_addr: str  # how node 0 is reached
    master_port: int
    cpu: float | None  # resourcesPerNode's CPUs (None: none asked for)
    gpu: int  # resourcesPerNode's GPUs
    # Whether the TrainJob has resourcesPerNode at all (any of CPU, memory, GPU asked for).
    asks_resources: bool


def proc_per_node(node: Node) -> str:
    """PET_NPROC_PER_NODE for `numProcPerNode: auto` (the torch runtime's, and a TrainJob that
    sets none): `auto` with a GPU or without resourcesPerNode, else the CPUs rounded up (a
    Quantity's Value()), at least 1 (torch.go calculateNumProcPerNode)."""
    if node.gpu or not node.asks_resources:
        return AUTO
    return str(max(1, math.ceil(node.cpu or 0)))


def injected_env(rt: Runtime, node: Node) -> dict[str, str]:
    """What `rt`'s plugin injects into `node`'s trainer container."""
    if rt.ml_policy is MLPolicy.TORCH:
        return {
            PET_NNODES: str(node.num_nodes),
            PET_NPROC_PER_NODE: proc_per_node(node),
            PET_NODE_RANK: str(node.rank),
            PET_MASTER_ADDR: node.master_addr,
            PET_MASTER_PORT: str(node.master_port),
        }
    if rt.ml_policy is MLPolicy.XGBOOST:
        return {
            DMLC_TRACKER_URI: node.master_addr,
            DMLC_TRACKER_PORT: str(node.master_port),
            DMLC_TASK_ID: str(node.rank),
            DMLC_NUM_WORKER: str(node.num_nodes * max(1, node.gpu)),
        }
    raise ValueError(f"the {rt.runtime_name} runtime's nodes run no command of trainstack's")


def kubedl_names(rt: Runtime, injected: dict[str, str]) -> dict[str, str]:
    """The KubeDL names the rendered command exports from the injected ones."""
    return {ours: injected[theirs] for ours, theirs in rt.kubedl_env}


def node_ranks(rt: Runtime, replicas: Mapping[str, int]) -> dict[tuple[str, int], int]:
    """Each replica `(role, index)`'s node rank (its pod's completion index): the trainer job's
    roles in order, so the master is node 0 and worker i node i + 1, as KubeDL ranks them."""
    ranks: dict[tuple[str, int], int] = {}
    for role in rt.trainer_job.roles:
        for i in range(replicas.get(role, 0)):
            ranks[(role, i)] = len(ranks)
    return ranks
