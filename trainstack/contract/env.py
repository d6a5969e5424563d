"""Every environment variable a replica's process sees, in a fixed order.

`base_env` is what all replicas share (it goes into pod templates); `replica_env` adds what
depends on the replica (framework variables, GPUs) and is what the local runner sets.

None of them holds a secret: `spec.secretEnv` names are checked here against the contract's, but
their values come from elsewhere (a Secret's `secretKeyRef` on a cluster, the runner's own
environment locally); `secret_env_text` is how they are shown.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from trainstack.contract import framework
from trainstack.contract.errors import ContractError
from trainstack.contract.hyper import hps_json, user_args_text, value_text
from trainstack.contract.layout import DEFAULT_ROOT, Layout
from trainstack.contract.topology import LOCALHOST, Topology, custom_ports
from trainstack.contractnames import (
    INDEX_ENV,
    INPUT_PREFIX,
    OUTPUT_PREFIX,
    PARAMETER_PREFIX,
    POD_IP_ENV,
    ROLE_ENV,
)
from trainstack.kubedl import (
    CONTRACT_NAMES,
    is_contract_env,
    job_kind,
    operator_wins,
    reserved_env,
)
from trainstack.spec.model import Run
from trainstack.spec.values import env_name
from trainstack.suggest import did_you_mean

# Every replica's role and index (docs/contract.md: ROLE_ENV, INDEX_ENV), so code can pick one
# replica of a role whatever the kind's RANK means (XGBoost's master-0 and worker-0 are both
# RANK 0).


def role_env(role: str) -> dict[str, str]:
    """What every replica of `role` shares beyond `base_env` (it goes into the role's template)."""
    return {ROLE_ENV: role}


def operator_names(run: Run, role: str) -> tuple[str, ...]:
    """The names in `replica_env(run, role, ...)` that the operator (or Kubernetes) sets on a
    cluster, not trainstack's template."""
    return job_kind(run.job_type).injected_names(role)


def base_env(
    run: Run,
    *,
    job_name: str,
    root: PurePosixPath | Path | str = DEFAULT_ROOT,
    ports: tuple[int, ...] | None = None,
) -> dict[str, str]:
    """The index-independent variables. `ports` overrides the run's CUSTOM_PORTS (local runs)."""
    lay = Layout.at(root)
    env: dict[str, str] = {
        "PAI_WORKING_DIR": lay.code,
        "PAI_CONFIG_DIR": lay.config,
        "PAI_USER_ARGS": user_args_text(run),
        "PAI_HPS": hps_json(run),
    }
    for name, value in run.parameters.items():
        env[PARAMETER_PREFIX + env_name(name)] = value_text(value)
    for name, binding in run.inputs.items():
        env[INPUT_PREFIX + env_name(name)] = lay.input_path(name, binding)
    # Every output the component declares, bound or not: an unbound one is still a directory
    # the command writes to (a run directory locally, an emptyDir in a plain render, the artifact
    # store for an environment), and `--model $PAI_OUTPUT_MODEL` must never expand to nothing.
    for channel in run.component.outputs:
        env[OUTPUT_PREFIX + env_name(channel.name)] = lay.output_dir(channel.name)
    if run.models:
        # Octopus: ${MODEL} is the model version to continue from; with several, the first.
        env["MODEL"] = lay.model_path(run.models[0].name, run.models[0].binding)
        for m in run.models:
            env[f"MODEL_{env_name(m.name)}"] = lay.model_path(m.name, m.binding)
    env["METRICS"] = lay.metrics
    env["JOB_NAME"] = job_name
    extra = custom_ports(run) if ports is None else ports
    if extra:
        env["CUSTOM_PORTS"] = ";".join(str(p) for p in extra)
    return env


def _merge_user_env(
    run: Run, env: dict[str, str], operator_wins: frozenset[str] = frozenset()
) -> dict[str, str]:
    for key, value in run.env.items():
        if key in operator_wins:
            continue  # the operator appends its value after the template's: it wins there
        if key in env:
            raise ContractError(
                f"run {run.name!r}: env {key} is set by the contract "
                f"(value {env[key]!r}) and cannot be overridden",
                hint="rename the variable in spec.env",
            )
        env[key] = value
    for key in run.secret_env:
        # Only the name is checked: the value never passes through the contract.
        if key in env:
            raise ContractError(
                f"run {run.name!r}: secretEnv {key} is set by the contract "
                "and cannot be overridden",
                hint="rename the variable in spec.secretEnv",
            )
    return env


def secret_env_text(run: Run) -> dict[str, str]:
    """How each `spec.secretEnv` variable is shown where a value would be: `<from secret
    name/key>`, never the value."""
    return {name: f"<from secret {ref}>" for name, ref in run.secret_env.items()}


def _refuse_reserved(run: Run) -> None:
    """The names `trainstack validate` refuses (trainstack.kubedl.reserved_env), refused here too
    for runs built past the loader: the contract's, whether or not this run sets them, and the
    operator's, whose values would silently win on a cluster."""
    operator = reserved_env(run.job_type) - frozenset(CONTRACT_NAMES)
    for group, names in (("env", run.env), ("secretEnv", run.secret_env)):
        for key in names:
            if is_contract_env(key):
                raise ContractError(
                    f"run {run.name!r}: {group} {key} is set by the contract "
                    "and cannot be overridden",
                    hint=f"rename the variable in spec.{group}",
                )
            if key in operator:
                raise ContractError(
                    f"run {run.name!r}: {group} {key} is set by KubeDL for a "
                    f"{run.job_type} job and cannot be overridden",
                    hint=f"rename the variable in spec.{group}",
                )


def run_base_env(
    run: Run, *, job_name: str, root: PurePosixPath | Path | str = DEFAULT_ROOT
) -> dict[str, str]:
    """`base_env` plus the run's own env, refusing names the contract or the operator set."""
    _refuse_reserved(run)
    return _merge_user_env(run, base_env(run, job_name=job_name, root=root))


def replica_env(
    run: Run,
    role: str,
    index: int,
    *,
    topology: Topology,
    root: PurePosixPath | Path | str = DEFAULT_ROOT,
    gpus: tuple[str, ...] = (),
) -> dict[str, str]:
    """Everything replica `index` of `role` sees. `gpus` are the device ids given to it."""
    res = run.resources.get(role)
    if res is None:
        raise ContractError(
            f"run {run.name!r} has no role {role!r}; roles: "
            + ", ".join(run.resources)
            + "."
            + did_you_mean(role, run.resources)
        )
    if not 0 <= index < res.replicas:
        raise ContractError(
            f"role {role!r} of run {run.name!r} has {res.replicas} "
            f"replica(s); index {index} is out of range"
        )
    _refuse_reserved(run)
    env = base_env(
        run, job_name=topology.job_name, root=root, ports=topology.ports_of(run, role, index)
    )
    env.update(role_env(role))
    env[INDEX_ENV] = str(index)
    env.update(framework.framework_env(run, role, index, topology, Layout.at(root)))
    if gpus:
        env["NVIDIA_VISIBLE_DEVICES"] = ",".join(gpus)
    if run.torch_elastic is not None and topology.is_local:
        # On a cluster the kubelet sets it from the pod's status.podIP (the renderer's fieldRef).
        env[POD_IP_ENV] = LOCALHOST
    return _merge_user_env(run, env, operator_wins(run.job_type, role))
