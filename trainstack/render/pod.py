"""One replica role → its pod template: the main container (KubeDL's container name, the
contract's env and argv, `secretEnv` as secretKeyRefs), the prepare init container, resources,
placement, security.

Container command, args and env values are escaped for the kubelet, which would otherwise expand
`$(NAME)` in them: `$` → `$$` turns back into exactly the text the contract computed.
"""

from __future__ import annotations

from typing import Any

from trainstack.contract import ContractError, custom_ports, launch_command
from trainstack.contract.env import role_env
from trainstack.contract.hyper import user_args
from trainstack.contractnames import INDEX_ENV, POD_IP_ENV
from trainstack.kubedl import (
    COMPLETION_INDEX_ANNOTATION,
    REPLICA_INDEX_LABEL,
    JobKind,
)
from trainstack.kubedl.restart import pod_restart_policy, replica_restart_policy
from trainstack.platformnames import GPU_RESOURCE, ROLE_LABEL
from trainstack.render.options import RenderOptions
from trainstack.render.parts import ML, Container, Env, Mount, Pod, PodParts, Replica
from trainstack.render.placement import placement, priority_class
from trainstack.spec.model import RoleResources, Run

SHM_VOLUME = "dshm"
# The init container that copies the run's sources in (code archives, downloaded inputs).
PREPARE_CONTAINER = "prepare"


def kubelet_escape(text: str) -> str:
    return text.replace("$", "$$")


def restart_policies(run: Run, kind: JobKind, role: str) -> tuple[str, str]:
    """(replica restartPolicy, pod restartPolicy), by trainstack.kubedl.restart's rule."""
    ft = run.fault_tolerance
    policy = replica_restart_policy(
        kind, role, fault_tolerance=ft is not None, unconditional=bool(ft and ft.unconditional)
    )
    return policy, pod_restart_policy(policy)


def resources(res: RoleResources, with_gpu: bool = True) -> dict[str, Any] | None:
    amounts: dict[str, str] = {}
    if res.cpu is not None:
        amounts["cpu"] = res.cpu.text
    if res.memory is not None:
        amounts["memory"] = res.memory.text
    if with_gpu and res.gpu:
        amounts[GPU_RESOURCE] = str(res.gpu)
    # requests == limits: Guaranteed QoS, and quota-bound namespaces need both.
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else None


def index_env(kind: JobKind) -> Env:
    """The replica's index, read by the kubelet from the pod the operator made: one template
    serves every index of a role."""
    # KubeDL v0.5.0 pkg/job_controller/pod.go labels each pod with its index; Kubernetes
    # annotates an Indexed Job's pods with theirs.
    path = (
        f"metadata.labels['{REPLICA_INDEX_LABEL}']"
        if kind.replicas_key is not None
        else f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
    )
    return Env(INDEX_ENV, value_from={"fieldRef": {"fieldPath": path}})


def pod_ip_env(run: Run) -> tuple[Env, ...]:
    """spec.torchElastic: the agent tells its worker's peers the pod's IP (contract.shell)."""
    if run.torch_elastic is None:
        return ()
    return (Env(POD_IP_ENV, value_from={"fieldRef": {"fieldPath": "status.podIP"}}),)


def container_env(run: Run, env: dict[str, str], extra: tuple[Env, ...] = ()) -> tuple[Env, ...]:
    """The contract's env (values escaped for the kubelet), `extra`, then each `spec.secretEnv`
    variable as a reference the kubelet resolves from the Secret: no secret value is in any
    manifest."""
    plain = tuple(Env(k, kubelet_escape(v)) for k, v in env.items())
    return (
        plain
        + extra
        + tuple(
            Env(k, value_from={"secretKeyRef": {"name": ref.secret, "key": ref.key}})
            for k, ref in run.secret_env.items()
        )
    )


def replica(
    run: Run,
    role: str,
    kind: JobKind,
    job: str,
    env: dict[str, str],
    labels: dict[str, str],
    parts: PodParts,
    options: RenderOptions,
    *,
    service_account: str | None,
) -> Replica:
    res = run.resources[role]
    log_dir = ML.logs if options.logs is not None else None
    # With the logs shipped, the launcher's restart records go beside them, so a deployed run's
    # hang restarts in place (which never reach the API) outlive the pod too.
    argv = [
        kubelet_escape(a)
        for a in launch_command(run, role, log_dir=log_dir, events_dir=log_dir, in_pod=True)
    ]
    split = len(argv) - 1 - len(user_args(run))
    mine = role_env(role)
    for key in mine:
        if key in env:
            raise ContractError(
                f"run {run.name!r}: env {key} is set by the contract and cannot be overridden",
                hint="rename the variable in spec.env",
            )
    ports: list[dict[str, Any]] = []
    if kind.port_name and kind.port is not None:
        ports.append({"name": kind.port_name, "containerPort": kind.port})
    ports += [{"name": f"custom-{i}", "containerPort": p} for i, p in enumerate(custom_ports(run))]
    volumes = list(parts.volumes)
    mounts = [m.k8s() for m in parts.mounts]
    if res.shared_memory is not None:
        volumes.append(
            {
                "name": SHM_VOLUME,
                "emptyDir": {"medium": "Memory", "sizeLimit": res.shared_memory.text},
            }
        )
        mounts.append(Mount(SHM_VOLUME, "/dev/shm").k8s())
    main = Container(
        name=kind.container,
        image=run.component.image,
        # command: up to the script (`sh -c SCRIPT`, behind the launcher when it runs one);
        # args: `$0` and the hyperparameters
        command=tuple(argv[:split]),
        args=tuple(argv[split:]),
        working_dir=parts.effective_working_dir,
        env=container_env(run, {**env, **mine}, (index_env(kind), *pod_ip_env(run))),
        ports=tuple(ports) or None,
        resources=resources(res),
        mounts=tuple(mounts),
    )
    inits = list(parts.init_containers)
    if parts.stage_steps:
        script = "set -e\n" + "\n".join(parts.stage_steps) + "\n"
        inits.append(
            Container(
                name=PREPARE_CONTAINER,
                image=run.component.image,
                command=("sh", "-c", kubelet_escape(script)),
                args=None,
                working_dir=None,
                env=(),
                ports=None,
                resources=resources(res, False),
                mounts=tuple(m.k8s() for m in parts.stage_mounts),
            )
        )
    place = placement(run, job, res.gpu, options)
    replica_policy, pod_policy = restart_policies(run, kind, role)
    secret = run.pull_secret or options.pull_secret
    security: dict[str, Any] = {"runAsUser": run.run_as_user}
    if run.run_as_user != 0:
        security["runAsNonRoot"] = True
    pod = Pod(
        labels={**labels, ROLE_LABEL: role},
        # KubeDL replaces it anyway (and warns for every pod); a batch/v1 Job requires it.
        restart_policy=None if kind.overwrites_template_restart_policy else pod_policy,
        service_account=service_account,
        priority_class=priority_class(run),
        security_context=security,
        pull_secrets=[{"name": secret}] if secret else None,
        node_selector=place.node_selector,
        tolerations=place.tolerations,
        affinity=place.affinity,
        spread=place.spread,
        init_containers=tuple(inits),
        containers=(main,),
        volumes=volumes,
    )
    if kind.replicas_key is None:  # an Indexed Job: one template for every replica
        return Replica(role, run.total_replicas, replica_policy, pod)
    return Replica(kind.role(role).replica_type, res.replicas, replica_policy, pod)
