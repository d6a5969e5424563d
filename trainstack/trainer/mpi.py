"""What Kubeflow Trainer v2.3.0's MPI plugin does with an MPI run's own TrainingRuntime, and what
trainstack's runtime gives it: the SSH keys it mounts, the hostfile, the port the nodes' sshd
listens on. The renderer (trainstack.render.mpiruntime) builds the runtime from these.

Why a runtime of the run's own: a TrainJob's trainer fields reach the trainer (ancestor) job's
`node` container only, and its runtime patches cannot set the image, resources, command or env of
a container (Trainer v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go:112-141;
pkg/apis/trainer/v1alpha1/trainjob_types.go:465-494 ContainerPatch), so the workers' pods could
not be the run's. A namespaced TrainingRuntime (trainingruntime_types.go:76-89) rendered from the
same pod templates as KubeDL's MPIJob carries them whole.

Paths are in github.com/kubeflow/trainer at tag v2.3.0; `mpi.go` is
pkg/runtime/framework/plugins/mpi/mpi.go, `constants.go` pkg/constants/constants.go.
"""

from __future__ import annotations

# trainingruntime_types.go:25-27: the namespaced kind a TrainJob's runtimeRef.kind may name.
TRAINING_RUNTIME_KIND = "TrainingRuntime"
# trainingruntime_types.go:280-284, 310-317: the implementation the plugin writes a hostfile for
# (`<pod address> slots=<numProcPerNode>` a line, mpi.go:316-342).
OPENMPI = "OpenMPI"
# Where the plugin mounts the Secret `<job>-mpi-ssh-auth` on every `node` container of the
# `node` and `launcher` jobs (mpi.go:141-200), its files (constants.go:132-157): the private
# key (mode 0640), the public key and authorized_keys (0644). trainstack's own path, outside the
# `/ml` tree and any home: Trainer's default /root/.ssh (trainingruntime_types.go:287-292) sits
# in a directory a non-root user may not enter.
SSH_AUTH_MOUNT_PATH = "/etc/trainstack/mpi-ssh"
SSH_PRIVATE_KEY = "id_rsa"
SSH_AUTHORIZED_KEYS = "authorized_keys"
# The port the nodes' sshd listens on: unprivileged (pods run as a non-root user), the one
# Trainer's own MPI runtime uses (manifests/base/runtimes/deepspeed_distributed.yaml:50-59).
SSH_PORT = 2222
# Open MPI's variable for the remote-start agent: not among those the plugin sets or reserves
# (constants.go:171-187, 305-306), so the launcher's mpirun is pointed at the nodes' port and key
# through it.
RSH_AGENT_ENV = "OMPI_MCA_plm_rsh_agent"
# The private key is mounted 0640, owner root: OpenSSH's client refuses a key readable by others
# when it owns it, so the key is usable by a non-root user only, reading it through the pod's
# fsGroup (Trainer's own runtime sets fsGroup: deepspeed_distributed.yaml:43-44).
PRIVATE_KEY_MODE = 0o640
# With runLauncherAsNode the `node` job has numNodes - 1 pods, at least one (`node_count`): a
# run of no worker would get one anyway.
MIN_WORKERS = 1


def node_count(num_nodes: int, run_launcher_as_node: bool) -> int:
    """How many pods the `node` job of an MPI runtime runs: numNodes, less the launcher's when it
    is a node too, at least one (mpi.go:116-125). The trainer (launcher) job runs one
    (pkg/runtime/framework/plugins/jobset/builder.go:120-123)."""
    return max(num_nodes - 1, 1) if run_launcher_as_node else num_nodes


def set_max_restarts(asked: int | None) -> int:
    """An MPI run's own runtime's JobSet failurePolicy.maxRestarts: the run's
    faultTolerance.maxRestarts (`asked`), carried since the runtime is the run's; none without
    it, as a KubeDL MPIJob without fault tolerance fails at its first failure."""
    return 0 if asked is None else asked
