"""KubeDL's per-kind facts (v0.5): API group, replica map, replica type names, container name
and port, and where the run policy sits. `custom` is a plain Kubernetes Indexed Job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainstack.contract.topology import DEFAULT_PORTS
from trainstack.spec.model import JobType


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    template: str
    replicas_key: str | None  # None for the batch/v1 Job
    container: str
    port_name: str | None
    run_policy_nested: bool  # MPIJob keeps it under spec.runPolicy
    # Variables KubeDL (or Kubernetes) injects into the container: a run may not set them.
    injected: tuple[str, ...] = ()

    def replica_type(self, role: str) -> str:
        return REPLICA_TYPES[role]

    def port(self, job_type: JobType) -> int | None:
        return DEFAULT_PORTS[job_type]


REPLICA_TYPES: Mapping[str, str] = {
    "master": "Master", "worker": "Worker", "ps": "PS", "chief": "Chief",
    "evaluator": "Evaluator", "launcher": "Launcher", "aimaster": "AIMaster",
}
_TORCHLIKE = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED")

KINDS: Mapping[JobType, Kind] = {
    JobType.TENSORFLOW: Kind("training.kubedl.io/v1alpha1", "TFJob", "tfjob.yaml.j2",
                             "tfReplicaSpecs", "tensorflow", "tfjob-port", False, ("TF_CONFIG",)),
    JobType.PYTORCH: Kind("training.kubedl.io/v1alpha1", "PyTorchJob", "pytorchjob.yaml.j2",
                          "pytorchReplicaSpecs", "pytorch", "pytorchjob-port", False, _TORCHLIKE),
    JobType.XGBOOST: Kind("training.kubedl.io/v1alpha1", "XGBoostJob", "xgboostjob.yaml.j2",
                          "xgbReplicaSpecs", "xgboostjob", "xgboostjob-port", False, _TORCHLIKE),
    JobType.ELASTICBATCH: Kind("inference.kubedl.io/v1alpha1", "ElasticBatchJob",
                               "elasticbatchjob.yaml.j2", "elasticBatchReplicaSpecs",
                               "elasticbatch", "elstcbatch-port", False,
                               ("ElASTICBATCH_CONFIG",)),
    JobType.MPI: Kind("training.kubedl.io/v1alpha1", "MPIJob", "mpijob.yaml.j2",
                      "mpiReplicaSpecs", "mpi", None, True,
                      ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile")),
    JobType.CUSTOM: Kind("batch/v1", "Job", "job.yaml.j2", None, "main", None, False,
                         ("JOB_COMPLETION_INDEX",)),
}
