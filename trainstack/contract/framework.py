"""The variables KubeDL injects per replica, computed the way its v0.5 controllers do.

On a cluster KubeDL sets these itself (a replica's pod template is shared by all its indices, so
the renderer cannot); this module states the same values so `trainstack env` can show them and
the local runner can set them. Facts from KubeDL's source, with the seeds winning on conflicts:

- TensorFlow: `TF_CONFIG` only when the job has more than one replica in total; Go's compact JSON
  `{"cluster": {role: [addr, ...]}, "task": {"type", "index"}, "environment": "cloud"}` with
  sorted roles. Seed 000's example lists the evaluator in `cluster`, so it is listed here too
  (KubeDL v0.5 leaves it out; the seed is the authority on the contract).
- PyTorch: `MASTER_ADDR` is the master's Service name (`localhost` in the master itself),
  `MASTER_PORT` the master's port, `WORLD_SIZE` the number of pods, `RANK` 0 for the master and
  index + 1 for workers; `PYTHONUNBUFFERED=0`.
- XGBoost: the same names, but `RANK` is the replica index in both roles and every replica,
  the master included, gets the master's Service name (KubeDL's xgboost `SetPodEnv`).
- ElasticBatch: workers get `ElASTICBATCH_CONFIG` (KubeDL's spelling) =
  `{"task": {"type": "worker", "index": i}, "environment": "cloud"}`; the AIMaster nothing.
- MPI: the launcher gets `OMPI_MCA_plm_rsh_agent` and `OMPI_MCA_orte_default_hostfile` (KubeDL
  mounts both under /etc/mpi); locally every rank is on this host, so only a hostfile is needed.
- custom (a Kubernetes Indexed Job): `JOB_COMPLETION_INDEX`, which Kubernetes sets.
"""

from __future__ import annotations

import json

from trainstack.contract.layout import Layout
from trainstack.contract.topology import Topology
from trainstack.spec.model import JobType, Run

MPI_CONFIG_DIR = "/etc/mpi"  # KubeDL's mpi-config-volume mount
HOSTFILE = "hostfile"
ELASTICBATCH_CONFIG = "ElASTICBATCH_CONFIG"


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def tf_config(run: Run, role: str, index: int, topology: Topology) -> str | None:
    if run.total_replicas <= 1:
        return None
    cluster = {r: list(topology.addresses[r]) for r in sorted(topology.addresses)}
    return _compact({"cluster": cluster, "task": {"type": role, "index": index},
                     "environment": "cloud"})


def framework_env(run: Run, role: str, index: int, topology: Topology,
                  layout: Layout) -> dict[str, str]:
    kind = run.job_type
    env: dict[str, str] = {}
    if kind is JobType.TENSORFLOW:
        cfg = tf_config(run, role, index, topology)
        if cfg is not None:
            env["TF_CONFIG"] = cfg
    elif kind in (JobType.PYTORCH, JobType.XGBOOST):
        port = topology.port("master", 0)
        is_master = role == "master"
        if kind is JobType.PYTORCH:
            addr = "localhost" if is_master else topology.service_name("master", 0)
            rank = 0 if is_master else index + 1
        else:
            addr, rank = topology.service_name("master", 0), index
        env["MASTER_PORT"] = str(port)
        env["MASTER_ADDR"] = addr
        env["WORLD_SIZE"] = str(run.total_replicas)
        env["RANK"] = str(rank)
        env["PYTHONUNBUFFERED"] = "0"
    elif kind is JobType.ELASTICBATCH:
        if role != "aimaster":
            env[ELASTICBATCH_CONFIG] = _compact({"task": {"type": role, "index": index},
                                                 "environment": "cloud"})
    elif kind is JobType.MPI:
        if role == "launcher":
            if topology.is_local:
                env["OMPI_MCA_orte_default_hostfile"] = layout.config + HOSTFILE
            else:
                env["OMPI_MCA_plm_rsh_agent"] = f"{MPI_CONFIG_DIR}/kubexec.sh"
                env["OMPI_MCA_orte_default_hostfile"] = f"{MPI_CONFIG_DIR}/{HOSTFILE}"
    elif kind is JobType.CUSTOM:
        env["JOB_COMPLETION_INDEX"] = str(index)
    return env


def local_hostfile(run: Run) -> str:
    """Open MPI hostfile for a local run: every worker's slot on this host."""
    workers = run.resources.get("worker")
    slots = workers.replicas if workers else 1
    return f"localhost slots={slots}\n"
