"""`-p NAME=VALUE` on the command line: a run's parameter set for this invocation, read as YAML
reads a scalar (`3` an integer, `0.1` a number, `true` a boolean, anything else text) and then
checked against the component's parameter types and ranges exactly as the run file's own value
would be; a problem with it is reported against the `-p` that gave it, not a line of the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import yaml

from trainstack.errors import Diagnostic, SpecError, UserError
from trainstack.yamlsource import Mark, SourceDoc

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")

Overrides = Mapping[str, "str | int | float | bool"]
NONE: Overrides = MappingProxyType({})


def parse(texts: Iterable[str]) -> Overrides:
    """`("lr=0.1", "optimizer=sgd")` → {"lr": 0.1, "optimizer": "sgd"}; one UserError for a
    malformed one. The last of a name given twice wins, as on any command line."""
    out: dict[str, str | int | float | bool] = {}
    for text in texts:
        name, sep, raw = text.partition("=")
        name = name.strip()
        if not sep or not _NAME.fullmatch(name):
            raise UserError(
                f"-p {text!r}: expected NAME=VALUE",
                hint="-p lr=0.01 sets the run's parameter lr for this run",
            )
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        if (
            value is None
            or isinstance(value, (list, dict))
            or not isinstance(value, (str, int, float, bool))
        ):
            value = raw  # not a scalar YAML reads: the text as it was given
        out[name] = value
    return MappingProxyType(out)


def apply(doc: SourceDoc, overrides: Overrides) -> SourceDoc:
    """The run document with `overrides` in its spec.parameters (the file itself is not
    touched); where a value came from is remembered for the diagnostics (`relocate`)."""
    if not overrides:
        return doc
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    if not isinstance(spec, dict):
        return doc  # the structure check reports the missing spec
    params = spec.setdefault("parameters", {})
    if not isinstance(params, dict):
        return doc  # ... and parameters that are not a mapping
    for name, value in overrides.items():
        params[name] = value
        # No line of the file holds it: the position of its parameters block, if any.
        doc.values.pop(("spec", "parameters", name), None)
        doc.keys.pop(("spec", "parameters", name), None)
    doc.values.setdefault(("spec", "parameters"), doc.mark(("spec",)) or Mark(1, 1))
    return doc


def relocate(err: SpecError, overrides: Overrides) -> SpecError:
    """The error with each problem of an overridden parameter said of its `-p`."""
    if not overrides:
        return err
    out = []
    for d in err.diagnostics():
        prefix = "spec.parameters."
        name = d.path[len(prefix) :] if d.path.startswith(prefix) else ""
        if name in overrides:
            d = Diagnostic(
                file=f"-p {name}={overrides[name]}",
                line=None,
                column=None,
                path=d.path,
                message=d.message,
                hint=d.hint,
                code=d.code,
            )
        out.append(d)
    return SpecError(out)
