"""A spec field declared once, on the frozen model's dataclass field: its place in the file
(section and key), its structural rule (cerberus), how a checked value becomes the model's
(`Load`), and what training_job.json calls it. The schema (schema.py, and through it fastcheck,
the diagnostics and `trainstack schema`), the loading (normalize.py) and training_job.json
(contract/files.py) are all read off these declarations, so a field added to the model is
validated, loaded and written with no other edit; one that needs a new kind of conversion adds
a `Load` and its function in normalize.py.

Standard library only, and nothing of the model's: model.py declares with it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass
from typing import Any

_KEY = "trainstack.spec"


class Section(enum.StrEnum):
    """Where a document holds a field: under `metadata`, under `spec`, or (a nested model's
    fields) in its parent's mapping."""

    METADATA = "metadata"
    SPEC = "spec"
    NESTED = "nested"


class Load(enum.StrEnum):
    """How a checked value becomes the model's (normalize.py holds one function per member).
    AS_IS: the value itself; a field without a value gets the dataclass default."""

    AS_IS = "as-is"
    ENUM = "enum"  # the enum type given as `nested`, from its value
    SORTED_MAP = "sorted-map"  # a mapping, sorted by key
    NESTED = "nested"  # a mapping -> the nested model (`declare(nested=...)`)
    NESTED_LIST = "nested-list"  # a list of mappings -> a tuple of nested models
    OPTIONAL_NESTED = "optional-nested"  # absent -> None, a mapping (or true) -> nested model
    DURATION = "duration"  # seconds or "1h30m" -> seconds
    QUANTITY = "quantity"  # a Kubernetes quantity -> Quantity
    PORT_LIST = "port-list"  # "10000;10001-10010" -> a tuple of ports
    ENV = "env"  # NAME -> scalar: sorted, values as the text a process sees
    SECRET_ENV = "secret-env"  # NAME -> "secret/key": sorted SecretRefs
    UNIQUE = "unique"  # a list -> a tuple without repeats, in order
    # Loaded against the run's component or the file's place (normalize.py): these also run
    # when the field is absent, since what they give then is not a constant.
    PARAMETERS = "parameters"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    MODELS = "models"
    RESOURCES = "resources"
    CODE = "code"


# The conversions normalize.py runs even for an absent field.
CONTEXTUAL = frozenset(
    {Load.PARAMETERS, Load.INPUTS, Load.OUTPUTS, Load.MODELS, Load.RESOURCES, Load.CODE}
)


@dataclass(frozen=True)
class SpecField:
    name: str  # the model's attribute
    section: Section
    key: str  # the file's key
    rule: Mapping[str, Any]  # cerberus, without the nested model's schema
    load: Load
    nested: type | None  # the nested model (Load.NESTED, NESTED_LIST, ...) or the enum (ENUM)
    job: str | None  # its key in training_job.json; None: not written there


def declare(
    section: Section,
    key: str,
    rule: Mapping[str, Any],
    *,
    default: Any = MISSING,
    factory: Any = MISSING,
    load: Load = Load.AS_IS,
    nested: type | None = None,
    job: str | bool | None = True,
) -> Any:
    """A dataclass field that is also a spec field. `job`: True writes it to training_job.json
    under `key`; a string under that name; False (or None) leaves it out, for a reason the
    declaration's comment gives."""
    spec = {
        "section": section,
        "key": key,
        "rule": rule,
        "load": load,
        "nested": nested,
        "job": key if job is True else (job or None),
    }
    metadata = {_KEY: spec}
    if factory is not MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def spec_fields(cls: type) -> Iterator[SpecField]:
    """The spec fields of a model class, in declaration order."""
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if spec is not None:
            yield SpecField(name=f.name, **spec)


def schema_of(cls: type, section: Section) -> dict[str, Any]:
    """The cerberus schema of `section` of `cls`'s documents: each field's rule, with a nested
    model's fields as its `schema`."""
    out: dict[str, Any] = {}
    for f in spec_fields(cls):
        if f.section is not section:
            continue
        rule = dict(f.rule)
        if f.nested is not None and dataclasses.is_dataclass(f.nested):
            inner = schema_of(f.nested, Section.NESTED)
            if f.load is Load.NESTED_LIST:  # a list of them
                rule["schema"] = {"type": "dict", "schema": inner}
            elif "valuesrules" in rule:  # a mapping of names to them
                rule["valuesrules"] = {**rule["valuesrules"], "schema": inner}
            else:
                rule["schema"] = inner
        out[f.key] = rule
    return out


def job_fields(obj: object) -> Iterator[tuple[str, SpecField, Any]]:
    """The fields of a model object that training_job.json writes: its key there, the field
    and its value."""
    for f in spec_fields(type(obj)):
        if f.job is not None:
            yield f.job, f, getattr(obj, f.name)
