"""The variables KubeDL injects per replica, computed the way its v0.5.0 controllers do.

On a cluster KubeDL sets these itself (a replica's pod template is shared by all its indices, so
the renderer cannot); this module states the same values so `trainstack env` can show them and
the local runner can set them. Which names each kind gets, on which roles, and the source file of
each fact are in `trainstack.kubedl` (docs/kubedl.md); the values:

- TensorFlow: `TF_CONFIG` only when the job has more than one replica in total; Go's compact JSON
  `{"cluster": {role: [addr, ...]}, "task": {"type", "index"}, "environment": "cloud"}` with
  sorted roles, every role with a Service (never an evaluator).
- PyTorch: `MASTER_ADDR` is the master's Service name (`localhost` in the master itself),
  `MASTER_PORT` the master's port, `WORLD_SIZE` the number of pods, `RANK` 0 for the master and
  index + 1 for workers; `PYTHONUNBUFFERED=0`.
- XGBoost: the same names, but `RANK` is the replica index in both roles and every replica,
  the master included, gets the master's Service name.
- ElasticBatch: workers get `ElASTICBATCH_CONFIG` (KubeDL's spelling) =
  `{"task": {"type": "worker", "index": i}, "environment": "cloud"}`; the AIMaster `JOB_NAME`,
  `NAMESPACE` and `JOB_TYPE=ELASTICBATCH`.
- MPI: the launcher gets `OMPI_MCA_plm_rsh_agent` and `OMPI_MCA_orte_default_hostfile` (KubeDL
  mounts both under /etc/mpi); locally every rank is on this host, so only a hostfile is needed.
- custom (a Kubernetes Indexed Job): `JOB_COMPLETION_INDEX`, which Kubernetes sets.
"""

from __future__ import annotations

import json

from trainstack.contract.layout import Layout
from trainstack.contract.topology import Topology
from trainstack.kubedl import (
    MPI_CONFIG_DIR,
    MPI_HOSTFILE,
    MPI_KUBEXEC,
    EnvScheme,
    job_kind,
    mpi_hostfile,
)
from trainstack.spec.model import Run

HOSTFILE = MPI_HOSTFILE
ELASTICBATCH_CONFIG = "ElASTICBATCH_CONFIG"
ELASTICBATCH_JOB_TYPE = "ELASTICBATCH"  # KubeDL v0.5.0 apis/inference/v1alpha1/defaults.go


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def tf_config(run: Run, role: str, index: int, topology: Topology) -> str | None:
    if run.total_replicas <= 1:
        return None
    reachable = topology.addressable(run)
    cluster = {r: list(reachable[r]) for r in sorted(reachable)}
    return _compact(
        {"cluster": cluster, "task": {"type": role, "index": index}, "environment": "cloud"}
    )


def framework_env(
    run: Run, role: str, index: int, topology: Topology, layout: Layout
) -> dict[str, str]:
    """The operator's variables for one replica, in the order it appends them."""
    scheme = job_kind(run.job_type).env_scheme
    env: dict[str, str] = {}
    if scheme is EnvScheme.TF_CONFIG:
        cfg = tf_config(run, role, index, topology)
        if cfg is not None:
            env["TF_CONFIG"] = cfg
    elif scheme is EnvScheme.TORCH:
        is_master = role == "master"
        env["MASTER_PORT"] = str(topology.port("master", 0))
        env["MASTER_ADDR"] = "localhost" if is_master else topology.service_name("master", 0)
        env["RANK"] = str(0 if is_master else index + 1)
        env["PYTHONUNBUFFERED"] = "0"
        env["WORLD_SIZE"] = str(run.total_replicas)
    elif scheme is EnvScheme.XGBOOST:
        env["MASTER_PORT"] = str(topology.port("master", 0))
        env["MASTER_ADDR"] = topology.service_name("master", 0)
        env["WORLD_SIZE"] = str(run.total_replicas)
        env["RANK"] = str(index)
        env["PYTHONUNBUFFERED"] = "0"
    elif scheme is EnvScheme.ELASTICBATCH:
        if role == "aimaster":
            env["JOB_NAME"] = topology.job_name
            env["NAMESPACE"] = topology.namespace
            env["JOB_TYPE"] = ELASTICBATCH_JOB_TYPE
        else:
            env[ELASTICBATCH_CONFIG] = _compact(
                {"task": {"type": role, "index": index}, "environment": "cloud"}
            )
    elif scheme is EnvScheme.MPI:
        if role == "launcher":
            if topology.is_local:
                env["OMPI_MCA_orte_default_hostfile"] = layout.config + HOSTFILE
            else:
                env["OMPI_MCA_plm_rsh_agent"] = f"{MPI_CONFIG_DIR}/{MPI_KUBEXEC}"
                env["OMPI_MCA_orte_default_hostfile"] = f"{MPI_CONFIG_DIR}/{MPI_HOSTFILE}"
    elif scheme is EnvScheme.INDEXED_JOB:
        env["JOB_COMPLETION_INDEX"] = str(index)
    return env


def mpi_slots_per_worker(run: Run) -> int:
    """`slotsPerWorker` of a run's MPIJob: one rank per GPU of a worker, at least one."""
    worker = run.resources.get("worker")
    return max(1, worker.gpu if worker else 1)


def local_hostfile(run: Run, job_name: str) -> str:
    """Open MPI hostfile for a local run. The operator's hostfile lists the launcher first (it
    runs ranks too), then every worker, each with `slotsPerWorker` slots (trainstack.kubedl
    .mpi_hostfile); locally every replica is this machine, so the same slots, in total, are on
    localhost, and `mpirun` without `-np` starts as many ranks as on the cluster."""
    workers = run.resources["worker"].replicas if "worker" in run.resources else 0
    slots = mpi_slots_per_worker(run)
    cluster = mpi_hostfile(job_name, workers, slots)
    total = slots * len(cluster.splitlines())
    return (
        "# the cluster's hostfile (ConfigMap "
        + job_name
        + "-config):\n"
        + "".join(f"#   {line}\n" for line in cluster.splitlines())
        + "# every replica runs on this machine, so all of their slots are here:\n"
        + f"localhost slots={total}\n"
    )
