"""Seed rules on a Component: names, env-var collisions, parameter types/range/enum,
constraints, code location and the command's references to contract variables."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from trainstack import suggest
from trainstack.codetree import CodeTreeError, code_files, inside
from trainstack.contractnames import INPUT_PREFIX, OUTPUT_PREFIX, PARAMETER_PREFIX
from trainstack.errors import Diagnostic
from trainstack.spec.pathlimits import too_long
from trainstack.spec.rules.raw import is_int, is_number, items, section
from trainstack.spec.values import env_name
from trainstack.yamlsource import SourceDoc

_GROUPS = (("inputs", INPUT_PREFIX), ("outputs", OUTPUT_PREFIX), ("parameters", PARAMETER_PREFIX))
_COMMAND_REF = re.compile(
    r"\$\{?(" + "|".join(re.escape(p) for _, p in _GROUPS) + r")([A-Za-z0-9_]+)\}?"
)
_OSS = re.compile(r"^oss://[a-z0-9][a-z0-9.-]{1,254}(/.*)?$")


def check(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    out += _names(doc)
    out += _parameters(doc)
    out += _constraints(doc)
    out += _code(doc)
    out += _command_refs(doc)
    out += _command_shell(doc)
    return out


def _names(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    seen: dict[str, tuple[str | int, ...]] = {}
    for group, prefix in _GROUPS:
        env_seen: dict[str, tuple[str, tuple[str | int, ...]]] = {}
        for i, item in items(doc.data, "spec", group):
            name = item.get("name")
            if not isinstance(name, str):
                continue
            path: tuple[str | int, ...] = ("spec", group, i, "name")
            if name in seen:
                first = seen[name]
                out.append(
                    doc.diag(
                        path,
                        f"name {name!r} is already used at "
                        f"{_fmt(first)}; channel and parameter names must be unique "
                        "across inputs, outputs and parameters",
                        code="duplicate-name",
                    )
                )
                continue
            seen[name] = path
            var = prefix + env_name(name)
            if var in env_seen:
                other, other_path = env_seen[var]
                out.append(
                    doc.diag(
                        path,
                        f"{name!r} and {other!r} (at {_fmt(other_path)}) both "
                        f"become the environment variable {var}",
                        hint="rename one of them",
                        code="env-collision",
                    )
                )
            else:
                env_seen[var] = (name, path)
    return out


def _fmt(path: tuple[str | int, ...]) -> str:
    from trainstack.yamlsource import format_path

    return format_path(path)


def _type_ok(ptype: str, value: Any) -> bool:
    if ptype == "Int":
        return is_int(value)
    if ptype == "Float":
        return is_number(value)
    if ptype == "String":
        return isinstance(value, str)
    if ptype == "Bool":
        return isinstance(value, bool)
    return False


_TYPE_WORD = {"Int": "an integer", "Float": "a number", "String": "text", "Bool": "true or false"}


def _unquoted(text: str) -> Any:
    """What YAML would read from the text without its quotes (`32` → 32, `true` → True)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def value_problem(param: dict[str, Any], value: Any) -> tuple[str, str | None] | None:
    """Why `value` is not acceptable for the raw parameter declaration, or None.

    Shared by defaults (here) and run parameter values (rules/run.py)."""
    ptype = param.get("type")
    if not isinstance(ptype, str) or ptype not in _TYPE_WORD:
        return None
    if not _type_ok(ptype, value):
        hint = None
        if ptype == "String" and value is not None:
            hint = "quote the value"
        elif isinstance(value, str) and ptype != "String" and _type_ok(ptype, _unquoted(value)):
            # only when the quotes are all that is wrong: "32" for an Int, not "big"
            hint = "remove the quotes"
        return f"expected {_TYPE_WORD[ptype]} ({ptype}), got {value!r}", hint
    if isinstance(value, float) and not math.isfinite(value):
        # nan/inf cannot be written as JSON (PAI_HPS, hyperparameters.json) nor range-checked.
        return f"expected a finite number, got {value!r}", None
    rng = param.get("range")
    if isinstance(rng, dict) and ptype != "Bool":
        measured = len(value) if ptype == "String" else value
        what = "length " if ptype == "String" else ""
        lo, hi = rng.get("min"), rng.get("max")
        if is_number(lo) and measured < lo:
            return f"{value!r} is out of range: {what}must be at least {lo}", None
        if is_number(hi) and measured > hi:
            return f"{value!r} is out of range: {what}must be at most {hi}", None
    enum = param.get("enum")
    if isinstance(enum, list) and ptype != "Bool" and value not in enum:
        return (
            f"{value!r} is not one of: {', '.join(repr(e) for e in enum)}",
            suggest.hint(value, [str(e) for e in enum]) if isinstance(value, str) else None,
        )
    return None


def _parameters(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for i, p in items(doc.data, "spec", "parameters"):
        base: tuple[str | int, ...] = ("spec", "parameters", i)
        ptype = p.get("type") if isinstance(p.get("type"), str) else None
        rng, enum = p.get("range"), p.get("enum")
        if ptype == "Bool" and rng is not None:
            out.append(
                doc.diag(
                    (*base, "range"),
                    "a range applies only to Int, Float and String parameters",
                    code="range-type",
                    key=True,
                )
            )
        if ptype == "Bool" and enum is not None:
            out.append(
                doc.diag(
                    (*base, "enum"),
                    "an enum applies only to Int, Float and String parameters",
                    code="enum-type",
                    key=True,
                )
            )
        if isinstance(rng, dict) and ptype in ("Int", "String", "Float"):
            lo, hi = rng.get("min"), rng.get("max")
            for key, bound in (("min", lo), ("max", hi)):
                if bound is None:
                    continue
                if ptype in ("Int", "String") and not is_int(bound):
                    what = "a length" if ptype == "String" else "an integer"
                    article = "an" if ptype == "Int" else "a"
                    out.append(
                        doc.diag(
                            (*base, "range", key),
                            f"expected {what} for {article} "
                            f"{ptype} parameter's range, got {bound!r}",
                            code="range-type",
                        )
                    )
                elif isinstance(bound, float) and not math.isfinite(bound):
                    out.append(
                        doc.diag(
                            (*base, "range", key),
                            f"expected a finite number, got {bound!r}",
                            code="range",
                        )
                    )
                elif ptype == "String" and is_int(bound) and bound < 0:
                    out.append(
                        doc.diag(
                            (*base, "range", key),
                            "a String length bound must not be negative",
                            code="range",
                        )
                    )
            if is_number(lo) and is_number(hi) and lo > hi:
                out.append(
                    doc.diag(
                        (*base, "range"),
                        f"range.min ({lo}) is greater than range.max ({hi})",
                        code="range",
                    )
                )
            if rng.get("min") is None and rng.get("max") is None:
                out.append(
                    doc.diag((*base, "range"), "a range needs min, max or both", code="range")
                )
        if isinstance(enum, list) and ptype in _TYPE_WORD and ptype != "Bool":
            for j, e in enumerate(enum):
                if not _type_ok(ptype, e):
                    out.append(
                        doc.diag(
                            (*base, "enum", j),
                            f"enum value {e!r} is not {_TYPE_WORD[ptype]} ({ptype})",
                            code="type",
                        )
                    )
                elif isinstance(e, float) and not math.isfinite(e):
                    out.append(
                        doc.diag(
                            (*base, "enum", j), f"expected a finite number, got {e!r}", code="type"
                        )
                    )
            if len(set(map(repr, enum))) != len(enum):
                out.append(doc.diag((*base, "enum"), "enum values must be unique", code="enum"))
        if "default" in p and p["default"] is not None:
            problem = value_problem(p, p["default"])
            if problem:
                out.append(
                    doc.diag((*base, "default"), problem[0], hint=problem[1], code="default")
                )
    return out


def _constraints(doc: SourceDoc) -> list[Diagnostic]:
    c = section(doc.data, "spec", "constraints")
    machine = c.get("machineType")
    if isinstance(machine, list) and "gpu" not in machine and c.get("multiGpu") is True:
        return [
            doc.diag(
                ("spec", "constraints", "multiGpu"),
                "multiGpu applies only to components that run on GPU machines",
                hint="add gpu to machineType or remove multiGpu",
                code="constraints",
            )
        ]
    return []


def _code(doc: SourceDoc) -> list[Diagnostic]:
    code = section(doc.data, "spec").get("code")
    if not isinstance(code, str):
        return []
    path = ("spec", "code")
    if "://" in code:
        if not _OSS.match(code):
            return [
                doc.diag(
                    path,
                    f"{code!r} is not a supported code location: expected a "
                    "local directory, oss://bucket/prefix/ or {git: URL}",
                    code="code",
                )
            ]
        return []
    why = too_long(code) or too_long(str((Path(doc.file).parent / code).absolute()))
    if why is not None:
        return [doc.diag(path, f"not a usable code directory: {why}", code="code")]
    if Path(code).is_absolute() or code.startswith("~"):
        return [
            doc.diag(
                path,
                f"code directory {code!r} is an absolute path; code must live "
                "inside the component's directory",
                hint="give a path relative to component.yaml, e.g. ./src",
                code="code",
            )
        ]
    base = Path(doc.file).resolve().parent
    target = (base / code).resolve()
    if not inside(target, base):
        return [
            doc.diag(
                path,
                f"code directory {code!r} is outside the component's directory "
                f"(it resolves to {target}); code must live inside {base}",
                hint="move the code into the component's folder, e.g. ./src",
                code="code",
            )
        ]
    if not target.is_dir():
        return [
            doc.diag(
                path,
                f"code directory {code!r} does not exist (looked for {target})",
                hint="create it or point code at the directory with your sources",
                code="code",
            )
        ]
    # The walk render packs and run --local copies (types from lstat/stat, nothing opened), so
    # validate refuses exactly what they would: links out, FIFOs, sockets, devices, dangling
    # links and loops.
    try:
        code_files(target, base)
    except CodeTreeError as err:
        return [doc.diag(path, err.message, hint=err.hint, code="code")]
    return []


def _command_refs(doc: SourceDoc) -> list[Diagnostic]:
    command = section(doc.data, "spec").get("command")
    if not isinstance(command, str):
        return []
    known: dict[str, set[str]] = {prefix: set() for _, prefix in _GROUPS}
    group_of = {prefix: group for group, prefix in _GROUPS}
    for group, prefix in _GROUPS:
        for _, item in items(doc.data, "spec", group):
            if isinstance(item.get("name"), str):
                known[prefix].add(env_name(item["name"]))
    out: list[Diagnostic] = []
    for prefix, name in sorted(set(_COMMAND_REF.findall(command))):
        if name not in known[prefix]:
            group = group_of[prefix]
            near = suggest.hint(name, known[prefix], show=f"${prefix}{{}}".format)
            out.append(
                doc.diag(
                    ("spec", "command"),
                    f"${prefix}{name} refers to no declared {group[:-1]}",
                    hint=near or f"declare it under spec.{group}",
                    code="command-ref",
                )
            )
    return out


def _command_shell(doc: SourceDoc) -> list[Diagnostic]:
    """Shell forms the contract's rewrite cannot make split-proof (docs/contract.md): refused
    here rather than run with a value split, globbed or lost."""
    from trainstack.shellform.rewrite import problems_with_hints

    command = section(doc.data, "spec").get("command")
    if not isinstance(command, str):
        return []
    return [
        doc.diag(("spec", "command"), problem, code="command-shell", hint=hint)
        for problem, hint in problems_with_hints(command)
    ]
