"""One source per vocabulary (issue 22 item 3): the schema's allowed lists are read off the enums,
and no copy of an enum's values reappears in spec/schema.py."""

from __future__ import annotations

import enum
from pathlib import Path

import pytest

from trainstack.kubedl.jobtype import JobType
from trainstack.spec import schema
from trainstack.spec.enums import Algorithm, BindingMode, Goal, ParamType, Pick, Scheduling

SCHEMA_SOURCE = Path(schema.__file__).read_text()


@pytest.mark.parametrize(
    ("allowed", "vocabulary"),
    [
        (schema.JOB_TYPES, JobType),
        (schema.PARAM_TYPES, ParamType),
        (schema.BINDING_MODES, BindingMode),
        (schema.SCHEDULING, Scheduling),
        (schema.SWEEP_ALGORITHMS, Algorithm),
        (schema.SWEEP_GOALS, Goal),
        (schema.SWEEP_PICKS, Pick),
    ],
)
def test_the_schema_allows_exactly_the_enums_values(
    allowed: list[str], vocabulary: type[enum.StrEnum]
) -> None:
    assert allowed == [v.value for v in vocabulary]
    for value in vocabulary:
        assert f'"{value.value}"' not in SCHEMA_SOURCE, f"a copy of {vocabulary.__name__}"
