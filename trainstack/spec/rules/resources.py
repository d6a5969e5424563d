"""Run rules on `spec.resources`: the roles the component's job kind has, replica counts, CPU,
memory, GPUs against the component's constraints, and `sharedMemory`."""

from __future__ import annotations

from typing import Any

from trainstack import suggest
from trainstack.errors import Diagnostic
from trainstack.kubedl import job_kind
from trainstack.spec import values
from trainstack.spec.model import Component
from trainstack.spec.rules.raw import is_int, section
from trainstack.yamlsource import SourceDoc


def resources_rules(doc: SourceDoc, comp: Component) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    resources = section(doc.data, "spec", "resources")
    kind = job_kind(comp.job_type)
    allowed = kind.role_names
    total = 0
    for role, res in resources.items():
        path = ("spec", "resources", role)
        if role not in allowed:
            out.append(
                doc.diag(
                    path,
                    f"{role!r} is not a role of a {comp.job_type} job; roles: "
                    + ", ".join(allowed),
                    hint=suggest.hint(role, allowed),
                    key=True,
                    code="role",
                )
            )
            continue
        refused = kind.role(role).refused
        if refused:
            out.append(
                doc.diag(
                    path,
                    f"a {comp.job_type} job cannot have the role {role!r}: {refused}",
                    key=True,
                    code="role",
                )
            )
            continue
        if not isinstance(res, dict):
            continue
        replicas = res.get("replicas", 1)
        gpu = res.get("gpu", 0)
        if is_int(replicas):
            total += replicas
            if role in kind.singleton_roles and replicas != 1:
                out.append(
                    doc.diag(
                        (*path, "replicas"),
                        f"a {comp.job_type} job has exactly one {role}",
                        code="role",
                    )
                )
        if is_int(gpu):
            out += _gpu_rules(doc, comp, (*path, "gpu"), gpu)
        for key in ("cpu", "memory", "sharedMemory"):
            if key in res and res[key] is not None:
                try:
                    values.quantity(res[key])
                except ValueError as err:
                    out.append(doc.diag((*path, key), str(err), code="quantity"))
        out += _shm_rule(doc, path, res)
    for role in kind.required_roles:
        if resources and role not in resources:
            out.append(
                doc.diag(
                    ("spec", "resources"),
                    f"a {comp.job_type} job needs a {role!r} "
                    f"role" + (f": {why}" if (why := kind.role(role).required_reason) else ""),
                    hint=f"add `{role}: {{replicas: 1}}`",
                    code="role",
                )
            )
    if not comp.constraints.multi_node and total > 1:
        out.append(
            doc.diag(
                ("spec", "resources"),
                f"component {comp.ref} does not support "
                f"multiple nodes (constraints.multiNode: false) but the run asks for "
                f"{total} replicas",
                code="constraints",
            )
        )
    gpu_total = sum(
        r.get("gpu", 0)
        for r in resources.values()
        if isinstance(r, dict) and is_int(r.get("gpu", 0))
    )
    if "cpu" not in comp.constraints.machine_types and gpu_total == 0:
        # Without resources the run gets one CPU-only replica, which a GPU-only component
        # cannot use either.
        out.append(
            doc.diag(
                ("spec", "resources"),
                f"component {comp.ref} runs only on GPU "
                "machines (constraints.machineType: [gpu]); give a role gpu: 1",
                code="constraints",
            )
        )
    return out


def _gpu_rules(
    doc: SourceDoc, comp: Component, path: tuple[str | int, ...], gpu: int
) -> list[Diagnostic]:
    c = comp.constraints
    if gpu > 0 and "gpu" not in c.machine_types:
        return [
            doc.diag(
                path,
                f"component {comp.ref} runs only on CPU machines "
                "(constraints.machineType: [cpu]); gpu must be 0",
                code="constraints",
            )
        ]
    if gpu > 1 and not c.multi_gpu:
        return [
            doc.diag(
                path,
                f"component {comp.ref} does not support several GPUs per replica "
                f"(constraints.multiGpu: false); asked for {gpu}",
                hint="use gpu: 1 and more replicas",
                code="constraints",
            )
        ]
    return []


def _shm_rule(doc: SourceDoc, path: tuple[str | int, ...], res: dict[str, Any]) -> list[Diagnostic]:
    try:
        shm = values.quantity(res["sharedMemory"]) if "sharedMemory" in res else None
        mem = values.quantity(res["memory"]) if "memory" in res else None
    except (ValueError, TypeError):
        return []
    if shm and mem and shm.value > mem.value:
        return [
            doc.diag(
                (*path, "sharedMemory"),
                f"sharedMemory ({shm.text}) exceeds the "
                f"role's memory ({mem.text}); /dev/shm counts against it",
                code="quantity",
            )
        ]
    return []
