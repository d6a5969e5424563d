"""The jinja2 environment and the step from template text to Kubernetes objects.

Templates are logic-free: every value reaches them computed and typed, and every value leaves
through `tojson`, so no user text is ever YAML syntax. Optional fields render as `null` and are
pruned here, which keeps `if`s out of the templates. The JSON written by `tojson` escapes the few
characters YAML would fold or reject (C1 controls, U+2028/2029, BOM), and keeps everything else
readable.

A platform project's templates (overrides.py) are found before the packaged ones. They are the
platform repository's text, run wherever a run is planned or deployed (CI on a pull request
among them), so every template renders in jinja2's immutable sandbox: no attribute starting with
`_`, no method that changes the context (one object's render cannot leak into the next), ranges
capped. Nothing random is offered (`lipsum`, `random` are removed), so the same inputs still
render the same bytes. A failing override is one `TemplateError` naming its file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache, partial
from importlib import resources
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from trainstack.excerpt import excerpt, printable
from trainstack.render import budget
from trainstack.render.overrides import (
    NAME_RULE,
    PACKAGE,
    Overrides,
    TemplateError,
    is_template_name,
    packaged,
)

_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")

# PyYAML's C loader when built with libyaml (it is, in the wheels).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _unserializable(value: Any) -> Any:
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined: raises UndefinedError, naming what is undefined
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def tojson(value: Any) -> str:
    # A filter is handed an Undefined without touching it: without `default`, a misspelled
    # variable would be a TypeError about serialising, not the UndefinedError naming it.
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=_unserializable)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _source(overrides: Overrides | None, name: str) -> tuple[str, str, Any]:
    """A template's text and file: the platform's by that name, else trainstack's."""
    if not is_template_name(name):
        raise jinja2.TemplateNotFound(name, f"{name!r}: {NAME_RULE}")
    if overrides is not None and (text := overrides.text(name)) is not None:
        return text, overrides.filename(name), lambda: True
    text = packaged(name)
    if text is None:
        where = f"{overrides.folder} or " if overrides is not None else ""
        raise jinja2.TemplateNotFound(name, f"no template {name!r} in {where}trainstack's own")
    return text, str(resources.files(PACKAGE).joinpath(name)), lambda: True


class _BudgetedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox, with what an operator is about to build held to the render budget."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        budget.binop_size(operator, left, right)
        return super().call_binop(context, operator, left, right)


@lru_cache(maxsize=8)
def environment(overrides: Overrides | None = None) -> jinja2.Environment:
    """The environment for one set of templates. Keyed by the overrides' snapshot (folder and
    texts), so an edited override or another project's never gets a stale compiled template.

    `optimized=False`: jinja2 folds constant expressions while it compiles, so `"%999999999d" %
    1` was built (or a MemoryError raised) before any budget could see it; unfolded, it is an
    operator at render time, checked like any other."""
    env = _BudgetedSandbox(
        loader=jinja2.FunctionLoader(partial(_source, overrides)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        optimized=False,
    )
    env.filters["tojson"] = tojson
    del env.globals["lipsum"], env.filters["random"]  # the only nondeterministic builtins
    env.filters = {k: budget.bounded_filter(k, f) for k, f in env.filters.items()}
    env.globals["range"] = budget.CountedRange
    for name, text in overrides.files if overrides is not None else ():
        # Every override is compiled when the folder is read, used or not: a mistake in a
        # partial only some kinds include shows on the first render, not the first such run.
        filename = overrides.filename(name)  # type: ignore[union-attr]
        try:
            env.compile(text, name, filename)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(f"{err.filename}:{err.lineno}: {err.message}") from None
        except (MemoryError, RecursionError, OverflowError, ValueError) as err:
            raise TemplateError(f"{filename}: cannot be compiled: {type(err).__name__}") from None
    return env


def prune(value: Any) -> Any:
    """Drop null-valued keys (and empty key lists rendered as null), recursively."""
    if isinstance(value, dict):
        return {k: prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def render(
    template: str, context: Mapping[str, Any], overrides: Overrides | None = None
) -> dict[str, Any]:
    """`template` rendered with `context` into one object, the platform's overrides first."""
    text = _text(template, context, overrides)
    if overrides is None:
        doc = yaml.load(text, Loader=_Loader)  # a safe loader
        if not isinstance(doc, dict):
            raise AssertionError(f"template {template} rendered {type(doc).__name__}")
        return prune(doc)  # type: ignore[no-any-return]
    doc = _parsed(template, text, overrides)
    _keeps_identity(template, doc, render(template, context), overrides)
    return doc


def _text(template: str, context: Mapping[str, Any], overrides: Overrides | None) -> str:
    env = environment(overrides)
    if overrides is None:
        return env.get_template(template).render(**context)
    try:
        with budget.bounded():
            return _generate(env.get_template(template), context)
    except Exception as err:
        where = _in_override(err, overrides)
        if where is None and not isinstance(err, budget.Exhausted | MemoryError | RecursionError):
            raise  # trainstack's own templates failing is a bug: its traceback
        where = where or _chosen(template, overrides)
        what = (
            str(err)
            if isinstance(err, jinja2.TemplateError | budget.Exhausted)
            else f"{type(err).__name__}: {err}"
        )
        raise TemplateError(
            f"{where}: {what}",
            hint=f"rendering {template}; docs/templates.md lists what each template is given "
            "and what a render may spend",
        ) from None


def _generate(tmpl: jinja2.Template, context: Mapping[str, Any]) -> str:
    """The rendered text, refused as soon as it outgrows what the API server would accept."""
    out: list[str] = []
    size = 0
    for chunk in tmpl.generate(**context):
        size += len(chunk)
        budget.check_size(size, "a rendered object")
        out.append(chunk)
    return "".join(out)


def _chosen(template: str, overrides: Overrides) -> str:
    """The file a template's render started from: the override of that name, else the folder."""
    if overrides.text(template) is not None:
        return overrides.filename(template)
    return str(overrides.folder)


def _in_override(err: BaseException, overrides: Overrides) -> str | None:
    """`file:line` of the innermost override the error passed through (jinja2 rewrites a
    template's frames to its file and line), None when no override took part."""
    files = {overrides.filename(name) for name, _ in overrides.files}
    where = None
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in files:
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


class _UniqueKeys(_Loader):  # type: ignore[misc]
    """The safe loader (libyaml's parser), refusing a key twice in one mapping: a replaced
    partial that adds a second `tolerations:` would otherwise silently drop trainstack's own
    (the last one wins)."""


def _unique_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool):
            continue  # not hashable as given: construct_mapping says what is wrong with it
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {key!r} twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    return mapping


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


class _AliasFound(yaml.YAMLError):
    def __init__(self, anchor: str, mark: Any) -> None:
        super().__init__(anchor)
        self.problem = f"a YAML alias (*{anchor}), which no rendered object needs"
        self.problem_mark = mark


def _refuse_aliases(text: str) -> None:
    """trainstack renders no YAML alias (`*name`), and an override's output that holds one can
    expand each level tenfold ("billion laughs"): refused before anything is built."""
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            raise _AliasFound(str(event.anchor), event.start_mark)


def _parsed(template: str, text: str, overrides: Overrides) -> dict[str, Any]:
    """What an override rendered, as one object, or a TemplateError saying where it is not."""
    folder = overrides.folder
    try:
        _refuse_aliases(text)
        doc = yaml.load(text, Loader=_UniqueKeys)  # a safe loader
    except (MemoryError, RecursionError):
        # Nothing of the text is quoted: building a message from it could fail the same way.
        raise TemplateError(
            f"{template}, rendered with the templates in {folder}, is too deep or too large "
            "to read as YAML"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        line = ""
        if mark is not None:
            lines = text.splitlines()
            rendered = lines[mark.line] if mark.line < len(lines) else ""
            line = f" at line {mark.line + 1} of its output ({excerpt(rendered.strip())})"
        if isinstance(err, _AliasFound):
            hint = "write the value out where it is used"
        elif isinstance(err, yaml.constructor.ConstructorError):
            hint = "set the key once, adding to the packaged value (docs/templates.md)"
        else:
            hint = _layout_hint(overrides)
        raise TemplateError(
            f"{template}, rendered with the templates in {folder}, is not YAML: {problem}{line}",
            hint=hint,
        ) from None
    if not isinstance(doc, dict):
        raise TemplateError(
            f"{template}, rendered with the templates in {folder}, is not one object "
            f"(a {type(doc).__name__})"
        )
    pruned: dict[str, Any] = prune(doc)
    return pruned


def _layout_hint(overrides: Overrides) -> str:
    """What most likely broke an override's YAML: a file without its final newline (the line
    after its include is joined to its last line, keep_trailing_newline keeping what is
    there), else a partial indented otherwise than the one it replaces."""
    unended = [name for name, text in overrides.files if text and not text.endswith("\n")]
    if unended:
        names = ", ".join(printable(name) for name in unended)
        return (
            f"{names} in {overrides.folder} does not end with a newline, so what follows its "
            "include joins its last line: end the file with one"
        )
    return (
        "a replaced partial must indent as the one it replaces (`indent` in the template that "
        "includes it)"
    )


_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))


def _keeps_identity(
    template: str, doc: Mapping[str, Any], base: Mapping[str, Any], overrides: Overrides
) -> None:
    """An override adds to an object; what trainstack finds it by stays: its apiVersion, kind,
    name and namespace (plan, deploy, status and policies look objects up by them), and the
    labels trainstack gives it (`status`, `logs` and the console select by them)."""
    for path in _IDENTITY:
        got, want = _at(doc, path), _at(base, path)
        if got != want:
            raise TemplateError(
                f"{template}, rendered with the templates in {overrides.folder}: "
                f"{'.'.join(path)} is {_shown(got)}, not {_shown(want)}",
                hint="an override may add to what a template renders, not rename or move it",
            )
    labels = _at(doc, ("metadata", "labels")) or {}
    for key, value in (_at(base, ("metadata", "labels")) or {}).items():
        if not isinstance(labels, Mapping) or labels.get(key) != value:
            raise TemplateError(
                f"{template}, rendered with the templates in {overrides.folder}: "
                f"metadata.labels lost trainstack's {key}={value}",
                hint="an override may add labels, not drop or change trainstack's",
            )


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, Mapping) else None
    return doc


def _shown(value: Any) -> str:
    return "missing" if value is None else excerpt(str(value))
