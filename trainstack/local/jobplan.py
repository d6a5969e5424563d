"""From a run and its run directory to what the supervisor starts: every replica's argv, env,
working directory and log, plus the restart policy — all contract values from
`trainstack.contract`, none computed here."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainstack.contract import Layout as ContractLayout
from trainstack.contract import Topology, config_files, launch_command, replica_env
from trainstack.contract.layout import DEFAULT_ROOT
from trainstack.contract.shell import uses_launcher
from trainstack.contractnames import POD_IP_ENV
from trainstack.envnames import RUN_ID_ENV
from trainstack.errors import UserError
from trainstack.kubedl import (
    DeletedPod,
    JobType,
    SuccessRule,
    job_kind,
    replica_hostname,
)
from trainstack.kubedl.restart import (
    NEVER,
    UNCONDITIONAL_RESTART_CAP,
    backoff_limit,
    deleted_pod_rule,
    replica_restart_policy,
)
from trainstack.local import gpus as gpu_alloc
from trainstack.local import trainerjob
from trainstack.local.hostenv import machine_env
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.memlimit import Limit, ReplicaLimits, shm_limit
from trainstack.local.podns import (
    JobNamespaces,
    PodAddresses,
    hosts_file,
    pod_address,
    resolv_conf,
)
from trainstack.local.ports import AddressPlan, SharedLoopback
from trainstack.local.pyenv import env_overrides
from trainstack.local.sandbox import Layout
from trainstack.local.supervisor import Policy
from trainstack.platformnames import MIN_KUBERNETES_MINOR
from trainstack.spec.model import Run
from trainstack.trainer import Operator

# Variables a user's shell may carry over from an earlier job; the contract and the operator
# set their own (trainstack.kubedl's names, for every kind), and a GPU list is the runner's.


@dataclass(frozen=True)
class JobPlan:
    launches: tuple[ReplicaLaunch, ...]
    policy: Policy
    topology: Topology
    gpus: gpu_alloc.GpuPlan
    config: Mapping[str, str]  # file name under input/config → content
    # replica key -> its container's memory and /dev/shm limits (memlimit.MemoryWatch)
    limits: Mapping[str, ReplicaLimits]
    # /etc/hosts of every replica when each is a host of its own (trainstack.local.podns)
    hosts: str | None = None
    resolv: str | None = None  # and their /etc/resolv.conf


def replica_limits(
    run: Run, runs_as: Mapping[tuple[str, int], tuple[str, int]] | None = None
) -> dict[str, ReplicaLimits]:
    """Each replica's limits as its pod gets them, by the key it runs as (`runs_as`; default
    its own): `limits.memory` (the renderer sets limits equal to requests) and its /dev/shm.
    None for MPI: locally every rank runs under the
    launcher's `mpirun` (docs/local.md), so its process tree holds what a cluster spreads over
    the workers' pods and their limits."""
    if run.job_type is JobType.MPI:
        return {}
    out = {}
    for role, res in run.resources.items():
        memory = Limit(int(res.memory.value), res.memory.text) if res.memory else None
        shm = shm_limit(
            (int(res.shared_memory.value), res.shared_memory.text) if res.shared_memory else None,
            role,
        )
        for i in range(res.replicas):
            as_role, as_index = (runs_as or {}).get((role, i), (role, i))
            out[f"{as_role}-{as_index}"] = ReplicaLimits(memory=memory, shm=shm)
    return out


def policy_for(run: Run, *, grace_seconds: float) -> Policy:
    allowed, limit = restart_budget(run)
    return Policy(
        max_restarts=allowed,
        limit_text=limit,
        unconditional=run.fault_tolerance.unconditional if run.fault_tolerance else False,
        timeout_seconds=run.timeout_seconds,
        grace_seconds=grace_seconds,
        elastic_restarts=run.torch_elastic.max_restarts if run.torch_elastic else None,
        success=success_sets(run),
        start_after=start_order(run),
        final_roles=final_roles(run),
        deleted_pods=deleted_pods(run),
    )


def deleted_pods(run: Run) -> dict[str, DeletedPod]:
    """role -> how a pod of it deleted through the API is judged, on the oldest Kubernetes the
    platform runs on (MIN_KUBERNETES_MINOR): trainstack.kubedl.restart.deleted_pod_rule."""
    ft = run.fault_tolerance
    kind = job_kind(run.job_type)
    return {
        role: deleted_pod_rule(
            kind,
            replica_restart_policy(
                kind,
                role,
                fault_tolerance=ft is not None,
                unconditional=ft.unconditional if ft else False,
            ),
            kubernetes_minor=MIN_KUBERNETES_MINOR,
        )
        for role in run.resources
    }


def final_roles(run: Run) -> dict[str, str]:
    """Roles rendered `Never` although the run asks for restarts (trainstack.kubedl.restart: a
    role the operator never fails over): role -> why, for the failure's message."""
    ft = run.fault_tolerance
    if ft is None:
        return {}
    kind = job_kind(run.job_type)
    return {
        role: f"KubeDL v0.5.0 fails the {kind.kind} when its {role} fails, whatever its exit code"
        for role in run.resources
        if replica_restart_policy(kind, role, fault_tolerance=True, unconditional=ft.unconditional)
        == NEVER
    }


def restart_budget(run: Run) -> tuple[int, str]:
    """How many times a local run may recreate a replica, and how to say so.

    The run's `faultTolerance.maxRestarts` is rendered as `backoffLimit`; KubeDL v0.5.0 counts
    it like this (pkg/job_controller/job.go, ReconcileJobs and pastBackoffLimit):
    - no faultTolerance: restartPolicy Never, nothing is retried;
    - `unconditional` (restartPolicy OnFailure): the kubelet restarts the container in place
      and the job fails once the restartCounts of the pods still Running add up to backoffLimit
      — so the restart that reaches it is the one that fails the job: backoffLimit - 1 restarts
      run to completion (a replica that exited 0 takes its own out of the sum: the supervisor's
      count). backoffLimit is maxRestarts capped at 3 (trainstack.kubedl.restart.backoff_limit,
      ModelArts' cap, counted in all as KubeDL counts);
    - otherwise (restartPolicy ExitCode): pastBackoffLimit skips ExitCode replicas and
      exceedsBackoffLimit counts reconcile retries, so a cluster recreates a failed pod without
      bound. A local run stops after maxRestarts recreations, so that it cannot loop forever;
      being stricter, a local success still predicts a cluster success (docs/local.md).
    """
    ft = run.fault_tolerance
    if ft is None:
        return 0, "no faultTolerance: restartPolicy Never"
    if ft.unconditional:
        limit = backoff_limit(ft.max_restarts, unconditional=True)
        capped = (
            f" (unconditional restarts are capped at {UNCONDITIONAL_RESTART_CAP}: backoffLimit "
            f"{limit})"
            if limit < ft.max_restarts
            else ""
        )
        return max(limit - 1, 0), (
            f"maxRestarts: {ft.max_restarts}{capped}; with restartPolicy OnFailure the operator "
            f"fails the job when the restart count reaches {limit}"
        )
    return ft.max_restarts, f"maxRestarts: {ft.max_restarts}"


def success_sets(run: Run) -> tuple[frozenset[str], ...]:
    """The job kind's success rule (trainstack.kubedl.SuccessRule) applied to this run's
    replicas: the job succeeds when every replica of any one set has exited 0."""

    def every(*roles: str) -> frozenset[str]:
        return frozenset(
            f"{role}-{i}"
            for role in roles
            if role in run.resources
            for i in range(run.resources[role].replicas)
        )

    rule = job_kind(run.job_type).success
    if rule is SuccessRule.CHIEF_ELSE_WORKER0:
        for leader in ("chief", "master"):
            if leader in run.resources:
                return (every(leader),)
        return (frozenset({"worker-0"}),)
    if rule is SuccessRule.MASTER_AND_ALL_WORKERS:
        return (every("master", "worker"),)
    if rule is SuccessRule.MASTER_ALONE:
        return (every("master"),)
    if rule is SuccessRule.AIMASTER_OR_ALL_WORKERS:
        return tuple(s for s in (every("aimaster"), every("worker")) if s)
    if rule is SuccessRule.LAUNCHER:
        return (every("launcher"),)
    return (every(*run.resources),)  # ALL_COMPLETIONS


def start_order(run: Run) -> dict[str, tuple[str, ...]]:
    """role -> the roles that must be running first (the model's `Role.starts_after`), for the
    roles this run has."""
    kind = job_kind(run.job_type)
    order: dict[str, tuple[str, ...]] = {}
    for role in run.resources:
        upstream = kind.role(role).starts_after if kind.has_role(role) else None
        if upstream is not None and upstream in run.resources:
            order[role] = (upstream,)
    return order


def secret_env_values(run: Run, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of `spec.secretEnv` for a local run: each NAME from the runner's own
    environment variable NAME (on a cluster they come from the named Secrets). One UserError
    naming every missing variable, so the run can fail before anything starts."""
    source = os.environ if environ is None else environ
    missing = [name for name in run.secret_env if name not in source]
    if missing:
        names = ", ".join(missing)
        refs = ", ".join(f"{name} from {run.secret_env[name]}" for name in missing)
        raise UserError(
            f"secretEnv {names}: set {names} in your environment for local runs",
            hint=f"on a cluster the Secret provides it ({refs}); locally trainstack "
            "passes your value to the replicas and writes it nowhere",
        )
    return {name: source[name] for name in run.secret_env}


def plan_job(
    run: Run,
    layout: Layout,
    *,
    run_id: str,
    venv: Path | None,
    grace_seconds: float,
    available_gpus: tuple[str, ...],
    secret_env: Mapping[str, str] | None = None,
    addresses: AddressPlan | None = None,
    passed_env: Mapping[str, str] | None = None,
    pods: JobNamespaces | None = None,
    operator: Operator = Operator.KUBEDL,
) -> JobPlan:
    """`secret_env`: the values of `run.secret_env` (default: `secret_env_values(run)`). They
    go into the replicas' environment only: not into the config files. `passed_env`: the
    shell's variables the user passes on (`--pass-env`; trainstack.local.hostenv). `pods`:
    the job's namespaces, in which each replica runs as a pod, a host of its own
    (trainstack.local.podns); without them,
    every replica shares this machine's network namespace (trainstack.local.ports).
    `operator`: whose semantics it follows (Trainer's: trainstack.local.trainerjob)."""
    secrets = secret_env_values(run) if secret_env is None else secret_env_values(run, secret_env)
    trainer = trainerjob.follows_nodes(run, operator)
    runs_as = trainerjob.runs_as(run, operator)
    keys = list(runs_as)
    topology = (addresses or _address_plan(pods, trainer)).topology(run, keys)
    gpus = gpu_alloc.assign(
        [("-".join(map(str, runs_as[k])), run.resources[k[0]].gpu) for k in keys], available_gpus
    )
    base = {**_base_env(run_id, venv), **(passed_env or {})}
    launches = []
    limits = replica_limits(run, runs_as)
    in_pod = pods is not None
    # In a pod the /ml tree is at /ml (the job's mount namespace binds the run directory there).
    root = DEFAULT_ROOT if in_pod else layout.root
    for ordinal, (role, index) in enumerate(keys):
        as_role, as_index = runs_as[(role, index)]
        given = gpus.by_replica[f"{as_role}-{as_index}"]
        # The contract's env holds no secret values (it checked the secretEnv names against its
        # own); they are added here, as a Secret's secretKeyRef adds them in a pod.
        env = {
            **base,
            **replica_env(run, role, index, topology=topology, root=root, gpus=given),
            **secrets,
        }
        _pod_identity(run, role, index, env, topology, as_index if trainer else None)
        # A container sees only its own GPUs; on one machine CUDA_VISIBLE_DEVICES does that.
        # Without GPUs here there is nothing to hide, and a pod without GPUs has no such
        # variable either: it is left unset.
        if given or available_gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(given)
        # Requirements are installed by the runner into a cached environment (or skipped with
        # --no-install), not by every replica at every start. The launcher (when the run needs
        # one; in a pod, always: it is PID 1) runs from the run directory's copy, records
        # restarts beside the logs and gets the runner's grace period for a hung tree.
        argv = launch_command(
            run,
            role,
            install_requirements=False,
            root=str(root),
            events_dir=str(layout.logs),
            termination_log=None,
            grace_seconds=grace_seconds,
            in_pod=in_pod,
        )
        pod_shm = None
        if pods is not None:
            # MPI has no limits here: every rank runs in the launcher's pod (replica_limits).
            known = limits.get(f"{as_role}-{as_index}")
            pod_shm = None if known is None else known.shm
            argv = _as_pod(pods, argv, env, ordinal, Path(root), pod_shm)
        launches.append(
            ReplicaLaunch(
                role=as_role,
                index=as_index,
                argv=tuple(argv),
                env=env,
                cwd=layout.usercode,
                log_path=layout.log(as_role, as_index),
                pod_shm=pod_shm,
                restarts_path=(
                    layout.restarts(as_role, as_index)
                    if uses_launcher(run, role, in_pod=in_pod)
                    else None
                ),
            )
        )
    return JobPlan(
        launches=tuple(launches),
        policy=_policy(run, operator, grace_seconds),
        topology=topology,
        gpus=gpus,
        # training_job.json names the paths this run's processes really use.
        config=config_files(run, topology, ContractLayout.at(root)),
        limits=limits,
        hosts=None
        if pods is None
        else (trainerjob.hosts_file if trainer else hosts_file)(run, topology, keys),
        resolv=None if pods is None else resolv_conf(topology.namespace),
    )


def _policy(run: Run, operator: Operator, grace_seconds: float) -> Policy:
    follow = trainerjob.policy_for if operator is Operator.TRAINER else policy_for
    return follow(run, grace_seconds=grace_seconds)


def _address_plan(pods: JobNamespaces | None, trainer: bool) -> AddressPlan:
    if pods is None:
        return SharedLoopback()
    return trainerjob.NodeAddresses() if trainer else PodAddresses()


def _pod_identity(
    run: Run, role: str, index: int, env: dict[str, str], topology: Topology, rank: int | None
) -> None:
    """The replica's hostname, and as TrainJob node `rank` (None: a KubeDL replica) its env.
    A pod's hostname is its name, which KubeDL makes `<job>-<role>-<i>` (KubeDL v0.5.0
    pkg/job_controller/pod.go createNewPod, pkg/util GenGeneralName); a custom run's Indexed
    Job pod is `<job>-<index>` (Kubernetes sets it from the completion index); a TrainJob's
    node JobSet's `<job>-node-0-<rank>`."""
    if rank is not None:
        node = trainerjob.node_env(run, role, index, rank, env, topology)
        env.clear()
        env.update(node)
        env["HOSTNAME"] = trainerjob.hostname(run, topology.job_name, rank)
        return
    env["HOSTNAME"] = replica_hostname(
        run.job_type is JobType.CUSTOM, topology.job_name, role, index
    )


def _as_pod(
    pods: JobNamespaces,
    argv: list[str],
    env: dict[str, str],
    ordinal: int,
    root: Path,
    shm: Limit | None,
) -> list[str]:
    """`argv` wrapped to run as the `ordinal`-th pod of the job, its environment given the
    pod's own address where the contract names it (the kubelet's status.podIP)."""
    if POD_IP_ENV in env:
        env[POD_IP_ENV] = pod_address(ordinal)
    cwd = Layout(root).usercode
    return list(pods.wrap(argv, ordinal, env["HOSTNAME"], cwd, None if shm is None else shm.bytes))


def _base_env(run_id: str, venv: Path | None) -> dict[str, str]:
    """This machine's environment stands in for the image's, as far as it says where programs,
    libraries and locales are (trainstack.local.hostenv): the user's other variables stay in
    the shell, as they would on a cluster. The Python running trainstack (or the requirements'
    environment) is first on PATH, so `python` in the command is one that has the packages the
    user installed."""
    env = machine_env(os.environ)
    interpreter_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in (interpreter_bin, env.get("PATH", "")) if p)
    if venv is not None:
        env.update(env_overrides(venv, env["PATH"]))
    # No PYTHONUNBUFFERED of our own: KubeDL sets it only for PyTorch and XGBoost (the contract
    # does the same), so a local run buffers Python's output exactly where a pod does.
    env[RUN_ID_ENV] = run_id
    return env
