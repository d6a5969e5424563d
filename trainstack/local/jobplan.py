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
from trainstack.errors import UserError
from trainstack.kubedl import job_kind
from trainstack.local import gpus as gpu_alloc
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.ports import free_ports
from trainstack.local.pyenv import env_overrides
from trainstack.local.sandbox import Layout
from trainstack.local.supervisor import Policy, RestartScope
from trainstack.spec.model import JobType, Run

# Roles that serve the others and never finish on their own: the job is done when the rest are.
SERVICE_ROLES: Mapping[JobType, frozenset[str]] = {
    JobType.TENSORFLOW: frozenset({"ps"}),
    JobType.ELASTICBATCH: frozenset({"aimaster"}),
    JobType.MPI: frozenset({"worker"}),  # MPI workers host the ranks mpirun starts; they wait
}
# Kinds whose replicas work independently: a transient failure restarts that replica alone.
# In every other kind the replicas form one collective, so the whole job restarts.
INDEPENDENT_KINDS = frozenset({JobType.ELASTICBATCH, JobType.CUSTOM})
# Variables a user's shell may carry over from an earlier job; the contract sets its own.
_STALE_PREFIXES = ("PAI_", "MODEL_")
_STALE_NAMES = frozenset({
    "TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "METRICS", "MODEL",
    "JOB_NAME", "CUSTOM_PORTS", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
    "ElASTICBATCH_CONFIG", "JOB_COMPLETION_INDEX", "OMPI_MCA_orte_default_hostfile",
})


@dataclass(frozen=True)
class JobPlan:
    launches: tuple[ReplicaLaunch, ...]
    policy: Policy
    topology: Topology
    gpus: gpu_alloc.GpuPlan
    config: Mapping[str, str]  # file name under input/config → content


def policy_for(run: Run, *, grace_seconds: float) -> Policy:
    ft = run.fault_tolerance
    return Policy(
        # No faultTolerance section: no restarts, as a job without a backoff budget.
        max_restarts=ft.max_restarts if ft else 0,
        unconditional=ft.unconditional if ft else False,
        scope=RestartScope.REPLICA if run.job_type in INDEPENDENT_KINDS else RestartScope.JOB,
        timeout_seconds=run.timeout_seconds,
        grace_seconds=grace_seconds,
        service_roles=SERVICE_ROLES.get(run.job_type, frozenset()),
    )


def secret_env_values(run: Run, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of `spec.secretEnv` for a local run: each NAME from the runner's own
    environment variable NAME (on a cluster they come from the named Secrets). One UserError
    naming every missing variable, so the run can fail before anything starts."""
    source = os.environ if environ is None else environ
    missing = [name for name in run.secret_env if name not in source]
    if missing:
        names = ", ".join(missing)
        refs = ", ".join(f"{name} from {run.secret_env[name]}" for name in missing)
        raise UserError(f"secretEnv {names}: set {names} in your environment for local runs",
                        hint=f"on a cluster the Secret provides it ({refs}); locally trainstack "
                        "passes your value to the replicas and writes it nowhere")
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
) -> JobPlan:
    """`secret_env`: the values of `run.secret_env` (default: `secret_env_values(run)`). They
    go into the replicas' environment only: not into the config files."""
    secrets = secret_env_values(run) if secret_env is None else secret_env_values(run, secret_env)
    keys = [(role, i) for role, res in run.resources.items() for i in range(res.replicas)]
    topology = _topology(run, keys)
    gpus = gpu_alloc.assign(
        [(f"{role}-{i}", run.resources[role].gpu) for role, i in keys], available_gpus
    )
    base = _base_env(run_id, venv)
    launches = []
    for role, index in keys:
        given = gpus.by_replica[f"{role}-{index}"]
        # The contract's env holds no secret values (it checked the secretEnv names against its
        # own); they are added here, as a Secret's secretKeyRef adds them in a pod.
        env = {**base, **replica_env(run, role, index, topology=topology, root=layout.root,
                                     gpus=given), **secrets}
        # A container sees only its own GPUs; on one machine CUDA_VISIBLE_DEVICES does that.
        # Without GPUs here there is nothing to hide, and a pod without GPUs has no such
        # variable either: it is left unset.
        if given or available_gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(given)
        launches.append(ReplicaLaunch(
            role=role, index=index,
            # Requirements are installed by the runner into a cached environment (or skipped
            # with --no-install), not by every replica at every start.
            argv=tuple(launch_command(run, role, install_requirements=False)),
            env=env, cwd=layout.usercode, log_path=layout.log(role, index),
        ))
    return JobPlan(
        launches=tuple(launches),
        policy=policy_for(run, grace_seconds=grace_seconds),
        topology=topology,
        gpus=gpus,
        # training_job.json names the paths this run's processes really use.
        config=config_files(run, topology, ContractLayout.at(layout.root)),
    )


def _topology(run: Run, keys: list[tuple[str, int]]) -> Topology:
    if job_kind(run.job_type).port is None:
        return Topology.local(run, {})
    ports = iter(free_ports(len(keys)))
    by_role: dict[str, list[int]] = {}
    for role, _index in keys:
        by_role.setdefault(role, []).append(next(ports))
    return Topology.local(run, by_role)


def _base_env(run_id: str, venv: Path | None) -> dict[str, str]:
    """This machine's environment stands in for the image's: the user's variables without stale
    contract ones, and the Python running trainstack (or the requirements' environment) first
    on PATH, so `python` in the command is one that has the packages the user installed."""
    env = {
        k: v for k, v in os.environ.items()
        if k not in _STALE_NAMES and not k.startswith(_STALE_PREFIXES)
    }
    interpreter_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in (interpreter_bin, env.get("PATH", "")) if p)
    if venv is not None:
        env.update(env_overrides(venv, env["PATH"]))
    # No PYTHONUNBUFFERED of our own: KubeDL sets it only for PyTorch and XGBoost (the contract
    # does the same), so a local run buffers Python's output exactly where a pod does.
    env["TRAINSTACK_RUN_ID"] = run_id
    return env
