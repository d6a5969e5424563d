"""One source per vocabulary: the schema's allowed lists are read off the enums, and no copy of
an enum's values reappears where the schema is written (spec/schema.py, spec/shapes.py and the
model's field declarations)."""

from __future__ import annotations

import enum
from pathlib import Path

import pytest

from trainstack.kubedl.jobtype import JobType
from trainstack.spec import model, schema, shapes
from trainstack.spec.enums import Algorithm, BindingMode, Goal, ParamType, Pick, Scheduling

SCHEMA_SOURCE = "".join(Path(m.__file__).read_text() for m in (schema, shapes, model))


@pytest.mark.parametrize(
    ("allowed", "vocabulary"),
    [
        (shapes.JOB_TYPES, JobType),
        (shapes.PARAM_TYPES, ParamType),
        (shapes.BINDING_MODES, BindingMode),
        (shapes.SCHEDULING, Scheduling),
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


def test_environment_variable_names_are_named_once() -> None:
    """TRAINSTACK_HOME and its siblings were literals in cli/options.py and constants elsewhere:
    trainstack/envnames.py owns them, and no other module spells one out."""
    from trainstack import envnames

    names = [v for k, v in vars(envnames).items() if k.endswith("_ENV")]
    assert "TRAINSTACK_HOME" in names and len(names) == len(set(names))
    root = Path(envnames.__file__).parent
    for path in root.rglob("*.py"):
        if path.name == "envnames.py":
            continue
        text = path.read_text()
        for name in names:
            assert f'"{name}"' not in text, f"{path.relative_to(root)} spells out {name}"


def test_the_env_option_is_defined_once() -> None:
    """`--env` was defined in 7 places with differing help and metavar: cli/options.py's
    `environment` is the one definition."""
    cli = Path(schema.__file__).parents[1] / "cli"
    spelled = [p.name for p in cli.glob("*.py") if '"--env"' in p.read_text()]
    assert spelled == ["options.py"]


def test_kubernetes_name_rules_the_api_version_and_the_contract_pattern_are_spelled_once() -> None:
    """The DNS-1123 label and subdomain rules were spelled four ways (the schema, the CLI's
    options, the platform's config), `trainstack.dev/v1` in three places and the pattern of a
    contract variable in two: trainstack/k8snames.py, trainstack/__init__.py and
    shellform/reeval.py own them."""
    root = Path(schema.__file__).parents[1]
    owners = {
        "[a-z0-9]([-a-z0-9]": {"k8snames.py"},
        "trainstack.dev/v1": {"__init__.py"},
        "(PAI_[A-Za-z0-9_]*|MODEL": {"reeval.py"},
    }
    for path in root.rglob("*.py"):
        text = path.read_text()
        for spelled, allowed in owners.items():
            if spelled in text and path.name not in allowed:
                raise AssertionError(f"{path.relative_to(root)} spells out {spelled!r}")


@pytest.mark.slow  # a static check over the whole source tree
def test_the_contracts_prefixes_are_spelled_once() -> None:
    """`PAI_INPUT_`, `PAI_OUTPUT_`, `PAI_HPS_` and `PAI_` were spelled in contract/env.py, the
    spec's command-reference rule, the command's rewrite and the reserved-name check:
    trainstack/contractnames.py owns them. A string that *is* a prefix, or starts an f-string,
    anywhere else is a copy (a whole variable's name, as in the scaffold's generated code, is
    not)."""
    import ast

    from trainstack import contractnames

    prefixes = {v for k, v in vars(contractnames).items() if k.endswith("_PREFIX")}
    assert prefixes == {"PAI_", "PAI_INPUT_", "PAI_OUTPUT_", "PAI_HPS_", "TRAINSTACK_"}
    root = Path(contractnames.__file__).parent
    copies = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "contractnames.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr) and node.values:
                first = node.values[0]
                if isinstance(first, ast.Constant) and first.value in prefixes:
                    copies.append(f"{path.relative_to(root)}:{node.lineno}")
            elif isinstance(node, ast.Constant) and node.value in prefixes:
                copies.append(f"{path.relative_to(root)}:{node.lineno}")
    assert copies == []
