"""The jinja2 environment and the step from template text to Kubernetes objects.

Templates are logic-free: every value reaches them computed and typed, and every value leaves
through `tojson`, so no user text is ever YAML syntax. Optional fields render as `null` and are
pruned here, which keeps `if`s out of the templates. The JSON written by `tojson` escapes the few
characters YAML would fold or reject (C1 controls, U+2028/2029, BOM), and keeps everything else
readable.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
import yaml

# Package data (trainstack/templates/*.j2): read through importlib.resources, so an installed
# wheel renders exactly as a checkout does.
TEMPLATES_PACKAGE = "trainstack"
TEMPLATES_DIR = "templates"
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")

# PyYAML's C loader when built with libyaml (it is, in the wheels).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def tojson(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def template_source(name: str) -> str | None:
    """A template's text from the installed package; None (jinja2: not found) when absent."""
    if "/" in name or "\\" in name or name.startswith("."):
        return None  # templates are one flat folder; nothing else is reachable
    resource = resources.files(TEMPLATES_PACKAGE).joinpath(TEMPLATES_DIR, name)
    try:
        return resource.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(template_source),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson"] = tojson
    return env


def prune(value: Any) -> Any:
    """Drop null-valued keys (and empty key lists rendered as null), recursively."""
    if isinstance(value, dict):
        return {k: prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def render(template: str, **context: Any) -> dict[str, Any]:
    text = environment().get_template(template).render(**context)
    doc = yaml.load(text, Loader=_Loader)  # a safe loader
    if not isinstance(doc, dict):
        raise AssertionError(f"template {template} rendered {type(doc).__name__}")
    pruned: dict[str, Any] = prune(doc)
    return pruned
