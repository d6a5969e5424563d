"""Load a `kind: Sweep` file: the spec loader's reader, schema (spec/schema.py SWEEP), fastcheck
and diagnostics, then the base run (a Run file or inline) and the search space against its
component. Every problem is reported together as one SpecError (exit 2).

`-p NAME=VALUE` (trainstack.spec.overrides) sets a parameter of the base run for every trial,
checked as the run's own value is; one naming a parameter the sweep varies is refused, since
every trial would overwrite it."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Protocol

from trainstack.errors import Diagnostic, SpecError
from trainstack.spec import overrides, structure, values
from trainstack.spec.model import Component, FrozenMap, Run
from trainstack.spec.rules import sweep as rules
from trainstack.spec.rules.names import sweep_name
from trainstack.spec.rules.raw import section
from trainstack.spec.schema import API_VERSION, MAX_SWEEP_TRIALS
from trainstack.spec.sweepmodel import (
    Algorithm,
    Budget,
    Choice,
    EarlyStopping,
    Goal,
    Objective,
    Pick,
    Range,
    Space,
    Sweep,
)
from trainstack.yamlsource import SourceDoc, load, shown


class Loader(Protocol):
    """What a sweep's base run is loaded through (trainstack.spec.loader.Loader, which imports
    this module to load the Sweep kind)."""

    def run(self, path: Path, params: overrides.Overrides = ...) -> Run: ...

    def run_from(self, doc: SourceDoc) -> Run: ...

    def _raw_parameters(self, comp: Component) -> dict[str, Any]: ...


def sweep_from(
    loader: Loader, doc: SourceDoc, params: overrides.Overrides = overrides.NONE
) -> Sweep:
    diags = structure.check(doc, "Sweep") + sweep_name(doc)
    spec = section(doc.data, "spec")
    varied = _varied(doc, params)
    if varied:
        raise SpecError(varied)
    base: tuple[Run, dict[str, Any], Path] | None = None
    ref = spec.get("run")
    try:
        if isinstance(ref, str) and ref:
            base = _base_from_file(loader, doc, ref, params)
        elif isinstance(ref, dict) and ref:
            base = _base_inline(loader, doc, ref, params)
    except SpecError as err:
        diags += err.diagnostics()
    if base is not None:
        run = base[0]
        diags += rules.check_space(doc, run.component, loader._raw_parameters(run.component))
    timeout = section(spec, "budget").get("timeout")
    if isinstance(timeout, int | str) and not isinstance(timeout, bool):
        try:
            values.duration_seconds(timeout)
        except ValueError as err:
            diags.append(doc.diag(("spec", "budget", "timeout"), str(err), code="timeout"))
    if diags:
        raise SpecError(_unique(diags))
    assert base is not None
    return _model(doc, *base, params)


def _varied(doc: SourceDoc, params: overrides.Overrides) -> list[Diagnostic]:
    """A -p for a parameter the sweep varies: every trial sets its own value over it, so the
    -p would be silently ignored."""
    space = section(doc.data, "spec").get("parameters")
    if not isinstance(space, dict):
        return []
    return [
        Diagnostic(
            file=f"-p {name}={value}",
            line=None,
            column=None,
            path=f"spec.parameters.{name}",
            message=f"the sweep varies {name} (spec.parameters.{name} of {doc.file}): each "
            "trial sets its own value, so a -p for it would be ignored",
            hint=f"drop -p {name}, or take {name} out of the sweep's spec.parameters to fix it "
            "for every trial",
            code="sweep-param",
        )
        for name, value in params.items()
        if name in space
    ]


def _with_params(data: dict[str, Any], params: overrides.Overrides) -> dict[str, Any]:
    """The base run's document with the -p values in its spec.parameters: what each trial's
    Run file is written from, so every trial records them."""
    if not params:
        return data
    spec = dict(data.get("spec") or {})
    spec["parameters"] = {**(spec.get("parameters") or {}), **params}
    return {**data, "spec": spec}


def _base_from_file(
    loader: Loader, doc: SourceDoc, ref: str, params: overrides.Overrides
) -> tuple[Run, dict[str, Any], Path]:
    target = Path(doc.file).parent / ref
    if not os.path.lexists(target):  # a FIFO, a folder or a link loop is read and reported as such
        raise SpecError(
            [
                doc.diag(
                    ("spec", "run"),
                    f"run file {ref!r} not found (looked for {target.resolve()})",
                    code="run-ref",
                )
            ]
        )
    try:
        run = loader.run(target, params)
    except SpecError as err:
        note = doc.diag(
            ("spec", "run"),
            f"the base run {str(shown(target))!r} is invalid "
            f"({len(err.diagnostics())} problem(s) reported for that file)",
            code="run-invalid",
        )
        raise SpecError([note, *err.diagnostics()]) from None
    data = load(shown(target)).data
    return run, _with_params(data, params), target.resolve().parent


def _base_inline(
    loader: Loader, doc: SourceDoc, inline: dict[str, Any], params: overrides.Overrides
) -> tuple[Run, dict[str, Any], Path]:
    """The inline `spec.run` checked as a Run document whose positions are the sweep file's."""
    meta = section(doc.data, "metadata")
    name = meta.get("name")
    data = {
        "apiVersion": API_VERSION,
        "kind": "Run",
        "metadata": {"name": name if isinstance(name, str) and name else "sweep"},
        "spec": inline,
    }
    prefix = ("spec", "run")
    marks = {("spec", *p[2:]): m for p, m in doc.values.items() if p[:2] == prefix}
    keys = {("spec", *p[2:]): m for p, m in doc.keys.items() if p[:2] == prefix}
    top = doc.mark(prefix)
    run_doc = SourceDoc(doc.file, data, {**({(): top} if top else {}), **marks}, keys)
    try:
        run = loader.run_from(overrides.apply(run_doc, params))
    except SpecError as err:
        err = overrides.relocate(err, params)
        raise SpecError([_under_run(d) for d in err.diagnostics()]) from None
    return run, _with_params(data, params), Path(doc.file).resolve().parent


def _under_run(d: Diagnostic) -> Diagnostic:
    """A diagnostic of the inline run, its path as the sweep file names it."""
    if d.path == "spec" or d.path.startswith("spec."):
        return dataclasses.replace(d, path="spec.run" + d.path[len("spec") :])
    return d


def _unique(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[Diagnostic] = set()
    out = []
    for d in diags:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _model(
    doc: SourceDoc,
    run: Run,
    base_doc: dict[str, Any],
    base_dir: Path,
    params: overrides.Overrides,
) -> Sweep:
    meta, spec = doc.data["metadata"], doc.data["spec"]
    space: dict[str, Space] = {}
    for name, raw in spec["parameters"].items():
        param = run.component.parameter(name)
        assert param is not None
        if isinstance(raw, list):
            space[name] = Choice(tuple(raw))
        else:
            integer = param.type.value == "Int"
            space[name] = Range(
                float(raw["min"]), float(raw["max"]), bool(raw.get("log", False)), integer
            )
    obj = spec["objective"]
    budget = spec.get("budget") or {}
    early = spec.get("earlyStopping")
    timeout = budget.get("timeout")
    return Sweep(
        name=meta["name"],
        experiment=meta.get("experiment") or meta["name"],
        description=meta.get("description", "") or "",
        tags=FrozenMap(dict(sorted((meta.get("tags") or {}).items()))),
        source=Path(doc.file).resolve(),
        base=run,
        base_doc=FrozenMap(base_doc),
        base_dir=base_dir,
        fixed=FrozenMap({name: run.parameters[name] for name in params}),
        space=FrozenMap(space),
        objective=Objective(obj["metric"], Goal(obj["goal"]), Pick(obj.get("value", "last"))),
        algorithm=Algorithm(spec.get("algorithm", "grid")),
        seed=spec.get("seed"),
        budget=Budget(
            budget.get(
                "trials", MAX_SWEEP_TRIALS if spec.get("algorithm", "grid") == "grid" else 10
            ),
            budget.get("parallel", 1),
            None if timeout is None else values.duration_seconds(timeout),
        ),
        early_stopping=None
        if early is None
        else EarlyStopping(early.get("startupTrials", 2), early.get("warmupSteps", 0)),
    )
