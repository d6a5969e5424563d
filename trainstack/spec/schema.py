"""The structural rules of the spec files, as cerberus schemas.

This is what the validator checks documents against and what `trainstack schema` turns into
JSON Schema. A Component's and a Run's are read off the model's field declarations
(trainstack.spec.model, `declare`), their one source; a Sweep's is written here. Rules that
relate fields to each other (or a run to its component) live in `rules/`.
"""

from __future__ import annotations

from typing import Any

from trainstack.spec.enums import Algorithm, Goal, Pick
from trainstack.spec.fields import Section, schema_of
from trainstack.spec.model import Component, Run
from trainstack.spec.shapes import API_VERSION as API_VERSION
from trainstack.spec.shapes import COMPONENT_NAME as COMPONENT_NAME
from trainstack.spec.shapes import DURATION, document, int_rule, str_rule
from trainstack.spec.shapes import INT64_MAX as INT64_MAX
from trainstack.spec.shapes import INT64_MIN as INT64_MIN
from trainstack.spec.shapes import MAX_DATA_INPUTS as MAX_DATA_INPUTS
from trainstack.spec.shapes import MAX_ENV as MAX_ENV
from trainstack.spec.shapes import MAX_PARAMETERS as MAX_PARAMETERS
from trainstack.spec.shapes import RUN_NAME as RUN_NAME


def _of(kind: str, model: type) -> dict[str, Any]:
    return document(kind, schema_of(model, Section.METADATA), schema_of(model, Section.SPEC))


COMPONENT: dict[str, Any] = _of("Component", Component)
RUN: dict[str, Any] = _of("Run", Run)


SWEEP_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,55}"  # room for the trial suffix `-t000` in run names
SWEEP_ALGORITHMS = [a.value for a in Algorithm]
SWEEP_GOALS = [g.value for g in Goal]
SWEEP_PICKS = [p.value for p in Pick]
MAX_SWEEP_TRIALS = 10000
# A grid search's points are built all at once (optuna's GridSampler takes the whole product):
# ten times the most trials a sweep runs is room to spare, and still a small list.
MAX_GRID_POINTS = 10 * MAX_SWEEP_TRIALS

SWEEP: dict[str, Any] = document(
    "Sweep",
    {
        "name": str_rule(
            SWEEP_NAME,
            "1-56 letters, digits, '_' and '-', starting with a letter or digit",
            required=True,
        ),
        "description": RUN["metadata"]["schema"]["description"],
        "experiment": RUN["metadata"]["schema"]["experiment"],
        "tags": RUN["metadata"]["schema"]["tags"],
    },
    {
        # A path to a Run file (relative to this file), or a Run's `spec` section inline. Its
        # shape is the Run schema's; spec/rules/sweep.py checks an inline one as a Run.
        "run": {"type": ["string", "dict"], "required": True, "empty": False},
        # parameter name -> a list (grid points or choices) or {min, max, log}; the shapes
        # inside are checked against the component in spec/rules/sweep.py.
        "parameters": {
            "type": "dict",
            "required": True,
            "empty": False,
            "maxlength": MAX_PARAMETERS,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": ["list", "dict"]},
        },
        "objective": {
            "type": "dict",
            "required": True,
            "schema": {
                "metric": str_rule(required=True, empty=False, maxlength=64),
                "goal": {"type": "string", "required": True, "allowed": SWEEP_GOALS},
                "value": {"type": "string", "allowed": SWEEP_PICKS},
            },
        },
        "algorithm": {"type": "string", "allowed": SWEEP_ALGORITHMS},
        "seed": int_rule(0, 2**31 - 1),
        "budget": {
            "type": "dict",
            "schema": {
                "trials": int_rule(1, MAX_SWEEP_TRIALS),
                "parallel": int_rule(1, 64),
                "timeout": {
                    "type": ["integer", "string"],
                    "regex": DURATION,
                    "min": 1,
                    "meta": {"expect": "seconds, or a duration such as 90m, 2h"},
                },
            },
        },
        "earlyStopping": {
            "type": "dict",
            "schema": {
                "startupTrials": int_rule(0, 1000),
                "warmupSteps": int_rule(0, 1000000),
            },
        },
    },
)

# The cerberus rules these schemas use. The compiled check (fastcheck) and the JSON Schema
# converter handle exactly these and refuse any other, so a new rule cannot silently go missing
# from either.
SCHEMA_RULES = frozenset(
    {
        "type",
        "required",
        "allowed",
        "regex",
        "min",
        "max",
        "minlength",
        "maxlength",
        "empty",
        "schema",
        "keysrules",
        "valuesrules",
        "meta",
    }
)

SCHEMAS: dict[str, dict[str, Any]] = {"Component": COMPONENT, "Run": RUN, "Sweep": SWEEP}
