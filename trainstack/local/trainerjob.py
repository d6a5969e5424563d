"""A local run for an environment whose operator is Kubeflow Trainer (`run --local --env`):
the run's replicas become the TrainJob's nodes, and fail, restart and succeed as the JobSet of
trainstack's runtimes does. Every value comes from trainstack.trainer: the node ranks and the
plugin's variables (`plugin`), the pods' names (`jobset`), the failure policy (`restart`).

- Replica `(role, index)` is node `rank`: the master node 0, then the workers (the trainer job's
  roles in order). It runs as `node-<rank>`, with `TRAINSTACK_ROLE=node` and
  `TRAINSTACK_REPLICA_INDEX` its rank, as the rendered TrainJob's nodes do.
- Its env is the contract's without KubeDL's variables, plus what the runtime's plugin injects
  (`PET_*`, `DMLC_*`) and the KubeDL names the rendered command exports from them.
- In the namespaces sandbox its hostname is JobSet's `<job>-node-0-<rank>`, reached as
  `<job>-node-0-<rank>.<job>` (the JobSet's Service) at the plugin's port 29500.

An MPI run (its own TrainingRuntime: `Runtime.per_run`) keeps the local runner's MPI mechanism,
its replicas as themselves (`follows_nodes` False): the launcher's mpirun starts every rank on
this machine from the local hostfile, so no sshd runs locally (docs/local.md). Its JobSet's rules
still decide: any failure restarts every replica, up to the run's own maxRestarts, and the
launcher's success ends the set (`mpi_policy`).
"""

from __future__ import annotations

from collections.abc import Sequence

from trainstack.contract import Topology
from trainstack.contract.env import operator_names
from trainstack.contract.topology import DEFAULT_NAMESPACE
from trainstack.contractnames import INDEX_ENV, ROLE_ENV
from trainstack.k8snames import job_name as k8s_job_name
from trainstack.local.podns import CLUSTER_DOMAIN, pod_address
from trainstack.local.supervisor import Policy, RestartScope
from trainstack.spec.model import FrozenMap, Run
from trainstack.trainer import Operator, Runtime, pod_hostname, runtime
from trainstack.trainer import pod_address as jobset_address
from trainstack.trainer.mpi import set_max_restarts
from trainstack.trainer.plugin import Node, injected_env, kubedl_names, node_ranks
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY

# (role, index, node rank), in rank order.
Nodes = Sequence[tuple[str, int, int]]


def nodes(run: Run) -> list[tuple[str, int, int]]:
    """The run's replicas as the trainer job's nodes, in rank order."""
    rt = runtime(run.job_type)
    ranks = node_ranks(rt, {role: res.replicas for role, res in run.resources.items()})
    return sorted(((role, i, rank) for (role, i), rank in ranks.items()), key=lambda n: n[2])


def node(run: Run, rank: int) -> tuple[str, int]:
    """The role and index node `rank` runs as: the trainer job's name (`node`) and its rank."""
    return runtime(run.job_type).trainer_job.name, rank


class NodeAddresses:
    """The namespaces sandbox's address plan (trainstack.local.ports.AddressPlan) for a
    TrainJob: every node at its pod's name under the JobSet's Service and the plugin's port."""

    def topology(self, run: Run, keys: list[tuple[str, int]]) -> Topology:
        rt = runtime(run.job_type)
        job = k8s_job_name(run.name)
        ranks = node_ranks(rt, {role: res.replicas for role, res in run.resources.items()})
        port = "" if rt.port is None else f":{rt.port}"
        addresses = {
            role: tuple(
                f"{_pod_address(rt, job, ranks[(role, i)])}{port}" for i in range(res.replicas)
            )
            for role, res in run.resources.items()
        }
        return Topology(
            job_name=job,
            addresses=FrozenMap(addresses),
            is_local=True,
            namespace=run.namespace or DEFAULT_NAMESPACE,
        )


def _pod_address(rt: Runtime, job: str, rank: int) -> str:
    return jobset_address(job, rt.trainer_job.name, rank)


def hostname(run: Run, job: str, rank: int) -> str:
    return pod_hostname(job, runtime(run.job_type).trainer_job.name, 0, rank)


def node_env(
    run: Run, role: str, index: int, rank: int, env: dict[str, str], topology: Topology
) -> dict[str, str]:
    """Replica `(role, index)`'s contract env made node `rank`'s: KubeDL's own variables out
    (a spec.env value of one of their names back in, as the TrainJob's env carries it), the
    node's role and index, the plugin's variables and the KubeDL names exported from them."""
    rt = runtime(run.job_type)
    kubedl = set(operator_names(run, role))
    out = {k: v for k, v in env.items() if k not in kubedl}
    out.update({k: v for k, v in run.env.items() if k in kubedl})
    out[ROLE_ENV] = rt.trainer_job.name
    out[INDEX_ENV] = str(rank)
    first_role = next(r for r in rt.trainer_job.roles if r in run.resources)
    # The plugin's port in the sandbox; in processes mode the free port node 0 listens on.
    port = topology.port(first_role, 0) or rt.port
    if port is None:
        raise ValueError(f"the {rt.runtime_name} runtime's nodes are reached at no port")
    res = run.resources[role]
    injected = injected_env(
        rt,
        Node(
            num_nodes=run.total_replicas,
            rank=rank,
            master_addr=topology.host(first_role, 0),
            master_port=port,
            cpu=None if res.cpu is None else float(res.cpu.value),
            gpu=res.gpu,
            asks_resources=res.cpu is not None or res.memory is not None or res.gpu > 0,
        ),
    )
    out.update(injected)
    out.update(kubedl_names(rt, injected))
    return out


def hosts_file(run: Run, topology: Topology, keys: Sequence[tuple[str, int]]) -> str:
    """/etc/hosts of every node pod: each pod (replica `keys[ordinal]`, started `ordinal`-th)
    by its hostname, its name under the JobSet's Service and the longer forms DNS answers."""
    job, ns = topology.job_name, topology.namespace
    ranks = runs_as(run, Operator.TRAINER)
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for ordinal, (_, rank) in enumerate(ranks[key] for key in keys):
        host = hostname(run, job, rank)
        sub = f"{host}.{job}"
        names = (host, sub, f"{sub}.{ns}", f"{sub}.{ns}.svc", f"{sub}.{ns}.svc.{CLUSTER_DOMAIN}")
        lines.append(f"{pod_address(ordinal)}\t{' '.join(names)}")
    return "\n".join(lines) + "\n"


def follows_nodes(run: Run, operator: Operator) -> bool:
    """Whether the run's replicas become the TrainJob's nodes (trainstack's shared runtimes),
    or keep their roles (KubeDL, or an MPI run's own runtime)."""
    return operator is Operator.TRAINER and not runtime(run.job_type).per_run


def mpi_policy(run: Run, *, grace_seconds: float) -> Policy:
    """An MPI run's own runtime's JobSet: every failure, of any replica and any exit code,
    restarts every replica (failurePolicy without rules), up to the run's faultTolerance
    .maxRestarts; the set succeeds when the launcher's job does (successPolicy targets it); the
    launcher starts once the workers' pods have (dependsOn the node job Ready)."""
    rt = runtime(run.job_type)
    asked = run.fault_tolerance
    restarts = set_max_restarts(asked.max_restarts if asked is not None else None)

    def every(job: str) -> tuple[str, ...]:
        return tuple(r for r in rt.job(job).roles if r in run.resources)

    targets = [r for job in rt.success_targets for r in every(job)]
    success = frozenset(f"{r}-{i}" for r in targets for i in range(run.resources[r].replicas))
    start_after = {
        role: tuple(r for name, _ in job.depends_on for r in every(name))
        for job in rt.replicated_jobs
        if job.depends_on
        for role in every(job.name)
    }
    return Policy(
        max_restarts=restarts,
        limit_text=f"the run's own runtime's failurePolicy.maxRestarts {restarts}: every "
        "failure restarts the whole JobSet",
        timeout_seconds=run.timeout_seconds,
        grace_seconds=grace_seconds,
        success=(success,),
        start_after=start_after,
        scope=RestartScope.SET,
    )


def policy_for(run: Run, *, grace_seconds: float) -> Policy:
    """The JobSet of trainstack's runtimes (an MPI run's own: `mpi_policy`): whole-set restarts
    up to the runtime's maxRestarts, whatever the run's faultTolerance says (a TrainJob cannot
    carry it), success when every node has exited 0 (JobSet's default All, the trainer job's one
    Job), the deadline from the first start, no start order (one replicated job, no
    dependsOn)."""
    if runtime(run.job_type).per_run:
        return mpi_policy(run, grace_seconds=grace_seconds)
    failure = RUNTIME_FAILURE_POLICY
    asked = run.fault_tolerance
    ignored = (
        f"; the run's faultTolerance.maxRestarts {asked.max_restarts} is not carried by a TrainJob"
        if asked is not None and asked.max_restarts != failure.max_restarts
        else ""
    )
    return Policy(
        max_restarts=failure.max_restarts,
        limit_text=failure.describe() + ignored,
        timeout_seconds=run.timeout_seconds,
        grace_seconds=grace_seconds,
        elastic_restarts=run.torch_elastic.max_restarts if run.torch_elastic else None,
        scope=RestartScope.SET if failure.whole_set else RestartScope.REPLICA,
    )


def runs_as(run: Run, operator: Operator) -> dict[tuple[str, int], tuple[str, int]]:
    """Each replica `(role, index)` of the run, in start order, and the role and index it runs
    as: itself, or on Trainer the TrainJob's node `(node, rank)`, in rank order."""
    if follows_nodes(run, operator):
        return {(role, i): node(run, rank) for role, i, rank in nodes(run)}
    return {
        (role, i): (role, i) for role, res in run.resources.items() for i in range(res.replicas)
    }


def replica_keys(run: Run, operator: Operator) -> list[str]:
    """The keys of the replicas a local run starts: `role-index`, or a TrainJob's `node-rank`."""
    return [f"{role}-{index}" for role, index in runs_as(run, operator).values()]
