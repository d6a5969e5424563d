"""Turn a checked raw document into frozen model objects: defaults applied, values parsed.

Only called once structure and rules passed, so it may assume the shapes in schema.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainstack.kubedl import job_kind
from trainstack.spec import values
from trainstack.spec.model import (
    Advanced,
    Binding,
    Code,
    CodeSource,
    Component,
    Constraints,
    FaultTolerance,
    FrozenMap,
    GitCode,
    InputChannel,
    JobType,
    ModelInput,
    OutputChannel,
    Parameter,
    ParamType,
    ParamValue,
    Range,
    RoleResources,
    Run,
    Scheduling,
    Scheme,
    SecretRef,
    Spot,
    TorchElastic,
)


def component(data: dict[str, Any], source: Path) -> Component:
    meta, spec = data["metadata"], data["spec"]
    c = spec.get("constraints")
    constraints = (
        Constraints()
        if c is None
        else Constraints(
            machine_types=tuple(dict.fromkeys(c.get("machineType", ["cpu", "gpu"]))),
            multi_node=c.get("multiNode", True),
            multi_gpu=c.get("multiGpu", True),
        )
    )
    return Component(
        name=meta["name"],
        version=meta["version"],
        description=meta.get("description", "") or "",
        version_description=meta.get("versionDescription", "") or "",
        job_type=JobType(spec["jobType"]),
        image=spec["image"],
        image_pull_secret=spec.get("imagePullSecret"),
        code=_code(spec.get("code"), source.parent),
        command=spec["command"],
        inputs=tuple(
            InputChannel(i["name"], i.get("description", "") or "", bool(i.get("required", False)))
            for i in spec.get("inputs") or []
        ),
        outputs=tuple(
            OutputChannel(o["name"], o.get("description", "") or "", bool(o.get("preload", False)))
            for o in spec.get("outputs") or []
        ),
        parameters=tuple(_parameter(p) for p in spec.get("parameters") or []),
        constraints=constraints,
        source=source,
    )


def _code(raw: Any, base: Path) -> Code | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        return Code(
            kind=CodeSource.GIT, git=GitCode(raw["git"], raw.get("branch"), raw.get("commit"))
        )
    if raw.startswith("oss://"):
        return Code(kind=CodeSource.OSS, uri=raw)
    return Code(kind=CodeSource.LOCAL, path=(base / raw).resolve())


def _parameter(p: dict[str, Any]) -> Parameter:
    ptype = ParamType(p["type"])
    rng = p.get("range")
    enum = p.get("enum")
    return Parameter(
        name=p["name"],
        type=ptype,
        default=_coerce(ptype, p.get("default")),
        required=bool(p.get("required", False)),
        description=p.get("description", "") or "",
        range=Range(rng.get("min"), rng.get("max")) if rng else None,
        enum=tuple(_coerce(ptype, e) for e in enum) if enum else None,  # type: ignore[misc]
    )


def _coerce(ptype: ParamType, value: Any) -> ParamValue | None:
    # Floats written as integers (`lr: 1`) become floats so the contract prints them consistently.
    if value is not None and ptype is ParamType.FLOAT:
        return float(value)
    return value  # type: ignore[no-any-return]


def run(data: dict[str, Any], source: Path, comp: Component, component_ref: str) -> Run:
    meta, spec = data["metadata"], data["spec"]
    given = spec.get("parameters") or {}
    params: dict[str, ParamValue] = {}
    for p in comp.parameters:
        value = given.get(p.name, p.default)
        if value is not None:
            params[p.name] = _coerce(p.type, value)  # type: ignore[assignment]
    spot = spec.get("spot")
    ft = spec.get("faultTolerance")
    elastic = spec.get("torchElastic")
    adv = spec.get("advanced") or {}
    timeout = spec.get("timeout")
    keep = spec.get("keepAfterFinished")
    return Run(
        name=meta["name"],
        description=meta.get("description", "") or "",
        experiment=meta.get("experiment"),
        tags=FrozenMap(dict(sorted((meta.get("tags") or {}).items()))),
        component=comp,
        component_ref=component_ref,
        parameters=FrozenMap(params),
        inputs=FrozenMap(_bindings(spec.get("inputs") or {}, comp, "inputs", source.parent)),
        outputs=FrozenMap(_bindings(spec.get("outputs") or {}, comp, "outputs", source.parent)),
        models=tuple(
            ModelInput(
                m["name"],
                _binding(m["uri"], None, "download", source.parent),
                None if m.get("version") is None else str(m["version"]),
            )
            for m in spec.get("models") or []
        ),
        resources=FrozenMap(_resources(spec.get("resources") or {}, comp.job_type)),
        priority=spec.get("priority"),
        scheduling=Scheduling(spec.get("scheduling", "intelligent")),
        spot=None
        if spot in (None, False)
        else Spot(
            bid_discount=spot.get("bidDiscount") if isinstance(spot, dict) else None,
            bid_price=float(spot["bidPrice"])
            if isinstance(spot, dict) and "bidPrice" in spot
            else None,
        ),
        fault_tolerance=None
        if ft is None
        else FaultTolerance(
            max_restarts=ft.get("maxRestarts", 3),
            unconditional=ft.get("unconditional", False),
            hang_timeout_seconds=None
            if ft.get("hangTimeout") is None
            else values.duration_seconds(ft["hangTimeout"]),
        ),
        torch_elastic=None
        if elastic is None
        else TorchElastic(max_restarts=elastic.get("maxRestarts", 3)),
        env=FrozenMap({k: _env_value(v) for k, v in sorted((spec.get("env") or {}).items())}),
        secret_env=FrozenMap(
            {k: _secret_ref(v) for k, v in sorted((spec.get("secretEnv") or {}).items())}
        ),
        timeout_seconds=None if timeout is None else values.duration_seconds(timeout),
        keep_seconds=None if keep is None else values.duration_seconds(keep),
        keep_logs=bool(spec.get("keepLogs", False)),
        run_as_user=spec.get("runAsUser", 1000),
        image_pull_secret=spec.get("imagePullSecret"),
        namespace=spec.get("namespace"),
        service_account=spec.get("serviceAccount"),
        advanced=Advanced(
            custom_ports=values.port_list(adv["customPortList"]) if "customPortList" in adv else (),
            custom_port_num_per_worker=adv.get("customPortNumPerWorker"),
            create_svc_for_all_workers=bool(adv.get("createSvcForAllWorkers", False)),
        ),
        source=source,
    )


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _secret_ref(text: str) -> SecretRef:
    secret, _, key = text.partition("/")
    return SecretRef(secret, key)


def _binding(uri: str, kind: str | None, mode: str, base: Path) -> Binding:
    b = values.binding(uri, kind=kind, mode=mode)
    if b.scheme is Scheme.FILE and not b.path.startswith("/"):
        # Relative file:// paths are relative to the run file, like the component path.
        resolved = str((base / b.path).resolve())
        suffix = "/" if b.path.endswith("/") else ""
        b = Binding(
            uri=b.uri,
            scheme=Scheme.FILE,
            location="",
            path=resolved + suffix,
            is_file=b.is_file,
            mode=b.mode,
        )
    return b


def _bindings(raw: dict[str, Any], comp: Component, group: str, base: Path) -> dict[str, Binding]:
    # Keep the component's channel order so env vars and mounts come out in a stable order.
    order = [c.name for c in (comp.inputs if group == "inputs" else comp.outputs)]
    out: dict[str, Binding] = {}
    for name in order:
        if name not in raw:
            continue
        value = raw[name]
        if isinstance(value, dict):
            out[name] = _binding(value["uri"], value.get("type"), value.get("mode", "mount"), base)
        else:
            out[name] = _binding(value, None, "mount", base)
    return out


def _resources(raw: dict[str, Any], job_type: JobType) -> dict[str, RoleResources]:
    if not raw:
        # What each required role needs (an MPIJob a launcher and a worker, an ElasticBatchJob
        # an AIMaster and a worker), else one replica of the primary role.
        return {role: RoleResources(replicas=n) for role, n in job_kind(job_type).default_resources}
    out: dict[str, RoleResources] = {}
    for role in job_kind(job_type).role_names:  # the model's role order, not the file's
        r = raw.get(role)
        if r is None:
            continue
        out[role] = RoleResources(
            replicas=r.get("replicas", 1),
            cpu=values.quantity(r["cpu"]) if r.get("cpu") is not None else None,
            memory=values.quantity(r["memory"]) if r.get("memory") is not None else None,
            gpu=r.get("gpu", 0),
            shared_memory=values.quantity(r["sharedMemory"])
            if r.get("sharedMemory") is not None
            else None,
        )
    return out
