"""Turn a checked raw document into frozen model objects: defaults applied, values parsed.

What to read and where is the model's declaration of each field (trainstack.spec.fields); here
is one function per kind of conversion (`Load`). Only called once structure and rules passed,
so it may assume the shapes the schema derives from those declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainstack.kubedl import job_kind
from trainstack.spec import values
from trainstack.spec.fields import CONTEXTUAL, Load, Section, SpecField, spec_fields
from trainstack.spec.model import (
    Binding,
    Code,
    CodeSource,
    Component,
    FrozenMap,
    GitCode,
    JobType,
    ModelInput,
    ParamValue,
    RoleResources,
    Run,
    Scheme,
    SecretRef,
)


@dataclass(frozen=True)
class _Context:
    base: Path  # the folder of the file being loaded: relative paths start there
    component: Component | None = None  # a run's component


def component(data: dict[str, Any], source: Path) -> Component:
    ctx = _Context(source.parent)
    return Component(
        **fields_of(Component, data["metadata"], Section.METADATA, ctx),
        **fields_of(Component, data["spec"], Section.SPEC, ctx),
        source=source,
    )


def run(data: dict[str, Any], source: Path, comp: Component, component_ref: str) -> Run:
    ctx = _Context(source.parent, comp)
    loaded = {
        **fields_of(Run, data["metadata"], Section.METADATA, ctx),
        **fields_of(Run, data["spec"], Section.SPEC, ctx),
    }
    loaded["component_ref"] = component_ref
    return Run(component=comp, source=source, **loaded)


def fields_of(cls: type, raw: Mapping[str, Any], section: Section, ctx: _Context) -> dict[str, Any]:
    """The constructor arguments of `cls` that `raw` (one section of a document) gives: each
    declared field present, converted; an absent one keeps its default, unless its value
    depends on the context (`CONTEXTUAL`)."""
    out: dict[str, Any] = {}
    for f in spec_fields(cls):
        if f.section is not section:
            continue
        value = raw.get(f.key)
        if value is None and f.load not in CONTEXTUAL:
            continue
        out[f.name] = _CONVERT[f.load](f, value, ctx)
    return out


def _nested(f: SpecField, raw: Mapping[str, Any], ctx: _Context) -> Any:
    assert f.nested is not None
    return f.nested(**fields_of(f.nested, raw, Section.NESTED, ctx))


def _optional_nested(f: SpecField, raw: Any, ctx: _Context) -> Any:
    # `spot: false` is no spot placement, `spot: true` one at the market price.
    if raw is False:
        return None
    return _nested(f, raw if isinstance(raw, dict) else {}, ctx)


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _secret_ref(text: str) -> SecretRef:
    secret, _, key = text.partition("/")
    return SecretRef(secret, key)


def _code(f: SpecField, raw: Any, ctx: _Context) -> Code | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        git = GitCode(**fields_of(GitCode, raw, Section.NESTED, ctx))
        return Code(kind=CodeSource.GIT, git=git)
    if raw.startswith("oss://"):
        return Code(kind=CodeSource.OSS, uri=raw)
    return Code(kind=CodeSource.LOCAL, path=(ctx.base / raw).resolve())


def _parameters(f: SpecField, raw: Any, ctx: _Context) -> FrozenMap[str, ParamValue]:
    """Given values, then the component's defaults, in the component's declaration order;
    parameters with neither are absent."""
    assert ctx.component is not None
    given = raw or {}
    out: dict[str, ParamValue] = {}
    for p in ctx.component.parameters:
        value = given.get(p.name, p.default)
        if value is not None:
            out[p.name] = p.coerce(value)
    return FrozenMap(out)


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


def _bindings(f: SpecField, raw: Any, ctx: _Context) -> FrozenMap[str, Binding]:
    # Keep the component's channel order so env vars and mounts come out in a stable order.
    assert ctx.component is not None
    given = raw or {}
    channels = ctx.component.inputs if f.load is Load.INPUTS else ctx.component.outputs
    out: dict[str, Binding] = {}
    for name in (c.name for c in channels):
        if name not in given:
            continue
        value = given[name]
        if isinstance(value, dict):
            out[name] = _binding(
                value["uri"], value.get("type"), value.get("mode", "mount"), ctx.base
            )
        else:
            out[name] = _binding(value, None, "mount", ctx.base)
    return FrozenMap(out)


def _models(f: SpecField, raw: Any, ctx: _Context) -> tuple[ModelInput, ...]:
    return tuple(
        ModelInput(
            m["name"],
            _binding(m["uri"], None, "download", ctx.base),
            None if m.get("version") is None else str(m["version"]),
        )
        for m in raw or []
    )


def _resources(f: SpecField, raw: Any, ctx: _Context) -> FrozenMap[str, RoleResources]:
    assert ctx.component is not None
    job_type: JobType = ctx.component.job_type
    if not raw:
        # What each required role needs (an MPIJob a launcher and a worker, an ElasticBatchJob
        # an AIMaster and a worker), else one replica of the primary role.
        kind = job_kind(job_type)
        return FrozenMap({role: RoleResources(replicas=n) for role, n in kind.default_resources})
    out: dict[str, RoleResources] = {}
    for role in job_kind(job_type).role_names:  # the model's role order, not the file's
        if raw.get(role) is not None:
            out[role] = RoleResources(**fields_of(RoleResources, raw[role], Section.NESTED, ctx))
    return FrozenMap(out)


_CONVERT: dict[Load, Callable[[SpecField, Any, _Context], Any]] = {
    Load.AS_IS: lambda f, raw, ctx: raw,
    Load.ENUM: lambda f, raw, ctx: f.nested(raw),  # type: ignore[misc]
    Load.SORTED_MAP: lambda f, raw, ctx: FrozenMap(dict(sorted(raw.items()))),
    Load.NESTED: _nested,
    Load.NESTED_LIST: lambda f, raw, ctx: tuple(_nested(f, item, ctx) for item in raw),
    Load.OPTIONAL_NESTED: _optional_nested,
    Load.DURATION: lambda f, raw, ctx: values.duration_seconds(raw),
    Load.QUANTITY: lambda f, raw, ctx: values.quantity(raw),
    Load.PORT_LIST: lambda f, raw, ctx: values.port_list(raw),
    Load.ENV: lambda f, raw, ctx: FrozenMap({k: _env_value(v) for k, v in sorted(raw.items())}),
    Load.SECRET_ENV: lambda f, raw, ctx: FrozenMap(
        {k: _secret_ref(v) for k, v in sorted(raw.items())}
    ),
    Load.UNIQUE: lambda f, raw, ctx: tuple(dict.fromkeys(raw)),
    Load.PARAMETERS: _parameters,
    Load.INPUTS: _bindings,
    Load.OUTPUTS: _bindings,
    Load.MODELS: _models,
    Load.RESOURCES: _resources,
    Load.CODE: _code,
}
