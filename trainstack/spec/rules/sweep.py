"""A sweep's search space against its component: every name a parameter, every value or range
inside the parameter's type, range and enum (the checks run values get, rules/component)."""

from __future__ import annotations

from typing import Any

from trainstack import suggest
from trainstack.errors import Diagnostic
from trainstack.spec.model import Component
from trainstack.spec.rules.component import value_problem
from trainstack.spec.rules.raw import is_int, is_number, section
from trainstack.spec.schema import MAX_GRID_POINTS, MAX_SWEEP_TRIALS
from trainstack.yamlsource import SourceDoc

_RANGE_KEYS = ("min", "max", "log")


def check_space(doc: SourceDoc, comp: Component, raw: dict[str, Any]) -> list[Diagnostic]:
    """`raw` maps each parameter of `comp` to its raw declaration (Loader._raw_parameters)."""
    out: list[Diagnostic] = []
    grid = section(doc.data, "spec").get("algorithm", "grid") == "grid"
    for name, space in section(doc.data, "spec", "parameters").items():
        path: tuple[str | int, ...] = ("spec", "parameters", name)
        if name not in raw:
            out.append(
                doc.diag(
                    path,
                    f"component {comp.ref} has no parameter {name!r}",
                    hint=suggest.hint(str(name), raw) or "declared: " + (", ".join(raw) or "none"),
                    key=True,
                    code="unknown-parameter",
                )
            )
        elif isinstance(space, list):
            out += _choices(doc, path, raw[name], space)
        elif isinstance(space, dict):
            if grid:
                out.append(
                    doc.diag(
                        path,
                        "a grid search takes a list of values for each parameter",
                        hint="list the values, or use algorithm: random or tpe for a range",
                        code="sweep-space",
                    )
                )
            else:
                out += _range(doc, path, raw[name], space)
    return out + (_grid_size(doc) if grid else [])


def _grid_size(doc: SourceDoc) -> list[Diagnostic]:
    """Counted before anything builds the grid: three parameters of 1,000 values are a billion
    points, which no sweep could hold."""
    lists = [v for v in section(doc.data, "spec", "parameters").values() if isinstance(v, list)]
    size = 1
    for values in lists:
        size *= max(len(values), 1)
        if size > MAX_GRID_POINTS:
            shape = " × ".join(str(len(v)) for v in lists)
            return [
                doc.diag(
                    ("spec", "parameters"),
                    f"a grid of {shape} points: at most {MAX_GRID_POINTS:,} (a sweep runs at "
                    f"most {MAX_SWEEP_TRIALS:,} trials)",
                    hint="list fewer values, or use algorithm: random or tpe, which sample the "
                    "space instead of enumerating it",
                    code="sweep-space",
                )
            ]
    return []


def _choices(
    doc: SourceDoc, path: tuple[str | int, ...], param: dict[str, Any], values: list[Any]
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if not values:
        return [doc.diag(path, "an empty list: give at least one value", code="sweep-space")]
    seen: list[Any] = []
    for i, value in enumerate(values):
        problem = value_problem(param, value)
        if problem:
            out.append(doc.diag((*path, i), problem[0], hint=problem[1], code="parameter"))
        elif any(value == s and type(value) is type(s) for s in seen):
            out.append(doc.diag((*path, i), f"{value!r} is listed twice", code="sweep-space"))
        seen.append(value)
    return out


def _range(
    doc: SourceDoc, path: tuple[str | int, ...], param: dict[str, Any], rng: dict[str, Any]
) -> list[Diagnostic]:
    ptype = param.get("type")
    if ptype not in ("Int", "Float"):
        return [
            doc.diag(
                path,
                f"a range needs an Int or Float parameter; this one is {ptype}",
                hint="list the values instead",
                code="sweep-space",
            )
        ]
    out: list[Diagnostic] = []
    for key in rng:
        if key not in _RANGE_KEYS:
            out.append(
                doc.diag(
                    (*path, key),
                    f"unknown field {key!r}",
                    key=True,
                    hint=suggest.hint(str(key), _RANGE_KEYS) or "allowed here: min, max, log",
                    code="unknown-key",
                )
            )
    for key in ("min", "max"):
        if key not in rng:
            out.append(doc.diag(path, f"required field {key!r} is missing", code="required"))
            continue
        value = rng[key]
        if not is_number(value) or (ptype == "Int" and not is_int(value)):
            word = "an integer" if ptype == "Int" else "a number"
            out.append(
                doc.diag((*path, key), f"expected {word} ({ptype}), got {value!r}", code="type")
            )
            continue
        problem = value_problem(param, value)
        if problem:
            out.append(doc.diag((*path, key), problem[0], hint=problem[1], code="parameter"))
    if "log" in rng and not isinstance(rng["log"], bool):
        out.append(
            doc.diag((*path, "log"), f"expected true or false, got {rng['log']!r}", code="type")
        )
    lo, hi = rng.get("min"), rng.get("max")
    if not out and is_number(lo) and is_number(hi):
        if lo >= hi:
            out.append(doc.diag(path, f"min ({lo}) must be below max ({hi})", code="sweep-space"))
        elif rng.get("log") and lo <= 0:
            out.append(
                doc.diag(
                    (*path, "min"),
                    f"a log-scale range must start above 0, got {lo}",
                    code="sweep-space",
                )
            )
    return out
