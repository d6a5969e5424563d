"""One test per rule the product documentation states (and the few trainstack adds), each on real
YAML files.

Seeds: 000 = PAI custom components, 001 = PAI DLC jobs, 002 = ModelArts training jobs,
003 = Octopus training tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spec.rulekit import COMPONENT, DELETE, Kit, component, run, write_yaml
from trainstack.errors import SpecError
from trainstack.spec.check import validate
from trainstack.spec.loader import Loader

FORBIDDEN_IN_DESCRIPTION = "@^\\#$%&*<>'|\"/"


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return Kit(tmp_path)


def _paths(errors: list[tuple[str, str]]) -> list[str]:
    return [p for p, _ in errors]


def _params(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [*COMPONENT["spec"]["parameters"], *extra]


# -- names and descriptions (Octopus for runs, PAI Designer for components) ------------------------


@pytest.mark.parametrize("name", ["a", "a1", "a-b-9", "x" * 47, "mnist-baseline-01"])
def test_run_name_allows_what_is_already_a_kubernetes_job_name(kit: Kit, name: str) -> None:
    assert kit.ok_run(run({"metadata": {"name": name}})).name == name


@pytest.mark.parametrize(
    "name", ["", "x" * 65, "a b", "a.b", "名字", "a/b", "-lead", "_lead", "ab\n"]
)
def test_run_name_rejects_other_names(kit: Kit, name: str) -> None:
    errors = kit.run_errors(run({"metadata": {"name": name}}))
    assert _paths(errors) == ["metadata.name"]
    assert "1-64 letters, digits, '_' and '-'" in errors[0][1]


def test_run_description_at_most_256_characters(kit: Kit) -> None:
    assert kit.ok_run(run({"metadata": {"description": "d" * 256}})).description == "d" * 256
    errors = kit.run_errors(run({"metadata": {"description": "d" * 257}}))
    assert errors == [("metadata.description", "has 257 characters; must have at most 256")]


@pytest.mark.parametrize("char", list(FORBIDDEN_IN_DESCRIPTION))
def test_run_description_rejects_each_forbidden_character(kit: Kit, char: str) -> None:
    errors = kit.run_errors(run({"metadata": {"description": f"costs 5{char}"}}))
    assert _paths(errors) == ["metadata.description"]
    assert FORBIDDEN_IN_DESCRIPTION in errors[0][1]


def test_run_description_allows_other_punctuation_and_non_ascii(kit: Kit) -> None:
    text = "baseline, v2 (ablation): lr=0.1! 基线；[test] ~ +-_.?"
    assert kit.ok_run(run({"metadata": {"description": text}})).description == text


# Up to 63: the name is a Kubernetes label value, at most 63 characters.
@pytest.mark.parametrize("name", ["a", "mnist-ddp", "0abc", "a" * 63, "a-1-b"])
def test_component_name_allows_lowercase_digits_dash_up_to_63(kit: Kit, name: str) -> None:
    assert kit.ok_component(component({"metadata": {"name": name}})).name == name


@pytest.mark.parametrize("name", ["", "A", "Mnist", "a_b", "a.b", "a" * 64, "-a", "a-", "a b"])
def test_component_name_rejects_other_names(kit: Kit, name: str) -> None:
    errors = kit.component_errors(component({"metadata": {"name": name}}))
    assert _paths(errors) == ["metadata.name"]


@pytest.mark.parametrize("version", ["0.0.1", "1.2.3", "10.20.30", "1.0.0"])
def test_component_version_is_x_y_z(kit: Kit, version: str) -> None:
    assert kit.ok_component(component({"metadata": {"version": version}})).version == version


@pytest.mark.parametrize("version", ["1.0", "1", "v1.0.0", "1.0.0-rc1", "01.0.0", "1.0.0.0", 1.0])
def test_component_version_rejects_other_forms(kit: Kit, version: object) -> None:
    errors = kit.component_errors(component({"metadata": {"version": version}}))
    assert _paths(errors) == ["metadata.version"]


# -- tags (PAI DLC) -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["team", "a.b_c-d", "K" * 128, "1", "aliyu", "xacs", "acs"])
def test_tag_key_allowed(kit: Kit, key: str) -> None:
    assert key in kit.ok_run(run({"metadata": {"tags": {key: "v"}}})).tags


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("aliyun", "must not start with 'aliyun' or 'acs:'"),
        ("aliyunTeam", "must not start with 'aliyun' or 'acs:'"),
        ("acs:team", "must not start with 'aliyun' or 'acs:'"),
        ("x-http://y", "must not contain http:// or https://"),
        ("https://y", "must not contain http:// or https://"),
        ("K" * 129, "expected 1-128 letters, digits, '-', '_' and '.'"),
        ("a b", "expected 1-128 letters, digits, '-', '_' and '.'"),
        ("a/b", "expected 1-128 letters, digits, '-', '_' and '.'"),
        ("équipe", "expected 1-128 letters, digits, '-', '_' and '.'"),
    ],
)
def test_tag_key_rejected(kit: Kit, key: str, why: str) -> None:
    errors = kit.run_errors(run({"metadata": {"tags": {key: "v"}}}))
    assert len(errors) == 1
    assert errors[0][0] == f"metadata.tags.{key}" and why in errors[0][1]


def test_tag_value_rules(kit: Kit) -> None:
    ok = kit.ok_run(run({"metadata": {"tags": {"a": "v" * 256, "b": "x,y,z", "c": ""}}}))
    assert ok.tags["b"] == "x,y,z"
    errors = kit.run_errors(
        run(
            {
                "metadata": {
                    "tags": {
                        "long": "v" * 257,
                        "link": "see http://x",
                        "secure": "HTTPS://x",
                        "num": 5,
                    }
                }
            }
        )
    )
    assert errors == [  # in file order
        ("metadata.tags.long", "tag value has 257 characters; at most 256"),
        ("metadata.tags.link", "tag value must not contain http:// or https://"),
        ("metadata.tags.secure", "tag value must not contain http:// or https://"),
        ("metadata.tags.num", "expected text, got an integer 5"),
    ]


# -- channels and parameters (PAI Designer) --------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "A-b_1", "9lives", "x-", "-x"])
def test_channel_and_parameter_names_allowed(kit: Kit, name: str) -> None:
    comp = kit.ok_component(
        component(
            inputs=[{"name": f"{name}"}],
            outputs=[{"name": f"o{name}"}],
            parameters=[{"name": f"p{name}", "type": "Int"}],
        )
    )
    assert comp.inputs[0].name == name


@pytest.mark.parametrize("group", ["inputs", "outputs", "parameters"])
@pytest.mark.parametrize("name", ["_a", "_", "a b", "a.b", "a/b", "a$b", "", "名"])
def test_channel_and_parameter_names_rejected(kit: Kit, group: str, name: str) -> None:
    item: dict[str, Any] = {"name": name}
    if group == "parameters":
        item["type"] = "Int"
    errors = kit.component_errors(component(**{group: [item]}))
    assert _paths(errors) == [f"spec.{group}[0].name"]
    assert "not starting with '_'" in errors[0][1]


def test_names_are_unique_across_inputs_outputs_and_parameters(kit: Kit) -> None:
    errors = kit.component_errors(
        component(
            inputs=[{"name": "data"}, {"name": "data"}],
            outputs=[{"name": "lr"}],
            parameters=_params(),
        )
    )
    assert errors == [
        (
            "spec.inputs[1].name",
            "name 'data' is already used at spec.inputs[0].name; channel "
            "and parameter names must be unique across inputs, outputs and parameters",
        ),
        (
            "spec.parameters[1].name",
            "name 'lr' is already used at spec.outputs[0].name; channel "
            "and parameter names must be unique across inputs, outputs and parameters",
        ),
    ]


def test_env_var_collision_names_both_and_the_variable(kit: Kit) -> None:
    errors = kit.component_errors(
        component(
            parameters=[
                {"name": "test_model", "type": "String"},
                {"name": "test-model", "type": "String"},
            ]
        )
    )
    assert errors == [
        (
            "spec.parameters[1].name",
            "'test-model' and 'test_model' (at spec.parameters[0].name) both become "
            "the environment variable PAI_HPS_TEST_MODEL",
        )
    ]


@pytest.mark.parametrize(
    ("group", "names", "var"),
    [
        ("inputs", ["train-data", "train_data"], "PAI_INPUT_TRAIN_DATA"),
        ("outputs", ["Model", "model"], "PAI_OUTPUT_MODEL"),
        ("parameters", ["lr", "LR"], "PAI_HPS_LR"),
    ],
)
def test_env_var_collision_in_every_group(kit: Kit, group: str, names: list[str], var: str) -> None:
    items: list[dict[str, Any]] = [{"name": n} for n in names]
    if group == "parameters":
        items = [{**i, "type": "Int"} for i in items]
    errors = kit.component_errors(component(**{group: items}))
    assert len(errors) == 1 and var in errors[0][1]
    assert repr(names[0]) in errors[0][1] and repr(names[1]) in errors[0][1]


def test_same_env_form_in_different_groups_is_not_a_collision(kit: Kit) -> None:
    comp = kit.ok_component(
        component(inputs=[{"name": "data-a"}], outputs=[{"name": "data_a"}], parameters=[])
    )
    assert [c.name for c in comp.outputs] == ["data_a"]


# -- parameter values: types, range, enum; defaults too (PAI Designer) -----------------------------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("epochs", "5", "expected an integer (Int), got '5'"),
        ("epochs", 5.0, "expected an integer (Int), got 5.0"),
        ("epochs", True, "expected an integer (Int), got True"),
        ("lr", "0.1", "expected a number (Float), got '0.1'"),
        ("lr", False, "expected a number (Float), got False"),
        ("lr", float("inf"), "expected a finite number, got inf"),
        ("optimizer", 1, "expected text (String), got 1"),
        ("amp", "true", "expected true or false (Bool), got 'true'"),
        ("amp", 0, "expected true or false (Bool), got 0"),
    ],
)
def test_parameter_values_are_type_checked(
    kit: Kit, name: str, value: object, message: str
) -> None:
    assert kit.run_errors(run(parameters={name: value})) == [(f"spec.parameters.{name}", message)]
    default = component(
        parameters=[{**p, "default": value} if p["name"] == name else p for p in _params()]
    )
    assert kit.component_errors(default) == [
        (f"spec.parameters[{[p['name'] for p in _params()].index(name)}].default", message)
    ]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("epochs", 0, "0 is out of range: must be at least 1"),
        ("epochs", 101, "101 is out of range: must be at most 100"),
        ("lr", -0.01, "-0.01 is out of range: must be at least 0.0"),
        ("lr", 1.01, "1.01 is out of range: must be at most 1.0"),
        ("tag", "a", "'a' is out of range: length must be at least 2"),
        ("tag", "123456789", "'123456789' is out of range: length must be at most 8"),
        ("optimizer", "adamw", "'adamw' is not one of: 'adam', 'sgd'"),
        ("batch", 48, "48 is not one of: 32, 64"),
        ("ratio", 1.0, "1.0 is not one of: 0.5, 1.5"),
    ],
)
def test_parameter_values_are_range_and_enum_checked(
    kit: Kit, name: str, value: object, message: str
) -> None:
    assert kit.run_errors(run(parameters={name: value})) == [(f"spec.parameters.{name}", message)]
    index = [p["name"] for p in _params()].index(name)
    default = component(
        parameters=[{**p, "default": value} if p["name"] == name else p for p in _params()]
    )
    assert kit.component_errors(default) == [(f"spec.parameters[{index}].default", message)]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("epochs", 1),
        ("epochs", 100),
        ("lr", 0),
        ("lr", 1.0),
        ("tag", "ab"),
        ("tag", "12345678"),
        ("optimizer", "sgd"),
        ("batch", 64),
        ("ratio", 1.5),
        ("amp", True),
    ],
)
def test_parameter_values_at_the_bounds_are_accepted(kit: Kit, name: str, value: object) -> None:
    assert kit.ok_run(run(parameters={name: value})).parameters[name] == value


def _hints(path: Path) -> dict[str, str | None]:
    with pytest.raises(SpecError) as caught:
        Loader().run(path)
    return {d.path: d.hint for d in caught.value.diagnostics()}


def test_parameter_enum_suggests_the_closest_value(kit: Kit, tmp_path: Path) -> None:
    kit.run_errors(run(parameters={"optimizer": "sdg"}))
    assert _hints(tmp_path / "run.yaml") == {"spec.parameters.optimizer": "did you mean 'sgd'?"}


def test_range_and_enum_apply_only_to_int_float_string(kit: Kit) -> None:
    errors = kit.component_errors(
        component(
            parameters=[
                {"name": "flag", "type": "Bool", "range": {"min": 0, "max": 1}, "enum": [True]}
            ]
        )
    )
    assert (
        "spec.parameters[0].range",
        "a range applies only to Int, Float and String parameters",
    ) in errors
    assert (
        "spec.parameters[0].enum",
        "an enum applies only to Int, Float and String parameters",
    ) in errors


def test_required_parameter_without_default_needs_a_value(kit: Kit) -> None:
    comp = component(parameters=[{"name": "seed", "type": "Int", "required": True}])
    assert kit.run_errors(run(), comp) == [
        ("spec.parameters", "required parameter 'seed' of rules@1.0.0 has no value and no default")
    ]
    assert kit.ok_run(run(parameters={"seed": 7}), comp).parameters == {"seed": 7}


# -- limits: hyperparameters, env vars (ModelArts), models and data inputs (Octopus) -------------


def test_at_most_100_hyperparameters(kit: Kit) -> None:
    many = [{"name": f"p{i}", "type": "Int", "default": i} for i in range(100)]
    assert len(kit.ok_component(component(parameters=many)).parameters) == 100
    errors = kit.component_errors(component(parameters=[*many, {"name": "p100", "type": "Int"}]))
    assert errors == [("spec.parameters", "has 101 entries; must have at most 100")]
    values = {f"p{i}": i for i in range(101)}
    assert ("spec.parameters", "has 101 entries; must have at most 100") in kit.run_errors(
        run(parameters=values), component(parameters=many)
    )


def test_at_most_100_env_vars(kit: Kit) -> None:
    env = {f"VAR_{i}": str(i) for i in range(100)}
    assert len(kit.ok_run(run(env=env)).env) == 100
    assert kit.run_errors(run(env={**env, "VAR_100": "x"})) == [
        ("spec.env", "has 101 entries; must have at most 100")
    ]


def test_at_most_10_input_model_versions(kit: Kit) -> None:
    models = [{"name": f"m{i}", "uri": f"oss://models/m{i}/", "version": i} for i in range(10)]
    loaded = kit.ok_run(run(models=models))
    assert [m.version for m in loaded.models] == [str(i) for i in range(10)]
    assert kit.run_errors(run(models=[*models, {"name": "m10", "uri": "oss://models/x/"}])) == [
        ("spec.models", "has 11 entries; must have at most 10")
    ]


def test_at_most_10_downloaded_data_inputs(kit: Kit) -> None:
    comp = component(inputs=[{"name": f"d{i}"} for i in range(11)])
    down = {f"d{i}": {"uri": f"oss://data/d{i}/", "mode": "download"} for i in range(10)}
    assert len(kit.ok_run(run(inputs=down), comp).inputs) == 10
    mixed = {**down, "d10": "oss://data/d10/"}  # the 11th is mounted: fine
    assert kit.ok_run(run(inputs=mixed), comp).inputs["d10"].mode == "mount"
    over = {**down, "d10": {"uri": "oss://data/d10/", "mode": "download"}}
    assert kit.run_errors(run(inputs=over), comp) == [
        ("spec.inputs", "11 inputs use mode download; at most 10")
    ]


def test_model_names_are_unique(kit: Kit) -> None:
    models = [
        {"name": "base", "uri": "oss://models/a/"},
        {"name": "base", "uri": "oss://models/b/"},
    ]
    assert kit.run_errors(run(models=models)) == [
        ("spec.models[1].name", "model name 'base' is already used by spec.models[0]")
    ]


# -- training constraints (PAI Designer) -----------------------------------------------------------


def _constrained(**constraints: Any) -> dict[str, Any]:
    return component(constraints=constraints)


def test_without_multi_gpu_at_most_one_gpu_per_replica(kit: Kit) -> None:
    comp = _constrained(machineType=["gpu"], multiGpu=False)
    ok = kit.ok_run(
        run(resources={"master": {"gpu": 1}, "worker": {"replicas": 4, "gpu": 1}}), comp
    )
    assert ok.total_replicas == 5
    errors = kit.run_errors(run(resources={"master": {"gpu": 1}, "worker": {"gpu": 2}}), comp)
    assert errors == [
        (
            "spec.resources.worker.gpu",
            "component rules@1.0.0 does not support "
            "several GPUs per replica (constraints.multiGpu: false); asked for 2",
        )
    ]


def test_without_multi_node_at_most_one_replica(kit: Kit) -> None:
    comp = _constrained(machineType=["cpu"], multiNode=False, multiGpu=False)
    assert kit.ok_run(run(resources={"master": {"replicas": 1}}), comp).total_replicas == 1
    assert kit.ok_run(run(), comp).total_replicas == 1
    for resources in ({"master": {}, "worker": {"replicas": 1}}, {"worker": {"replicas": 3}}):
        errors = kit.run_errors(run(resources=resources), comp)
        assert any(
            p == "spec.resources" and "does not support multiple nodes" in m for p, m in errors
        ), errors


def test_cpu_only_component_gets_no_gpus(kit: Kit) -> None:
    comp = _constrained(machineType=["cpu"], multiGpu=False)
    assert not kit.ok_run(run(resources={"master": {"gpu": 0}}), comp).uses_gpu
    assert kit.run_errors(run(resources={"master": {"gpu": 1}}), comp) == [
        (
            "spec.resources.master.gpu",
            "component rules@1.0.0 runs only on CPU machines "
            "(constraints.machineType: [cpu]); gpu must be 0",
        )
    ]


def test_gpu_only_component_needs_a_gpu(kit: Kit) -> None:
    comp = _constrained(machineType=["gpu"])
    assert kit.ok_run(run(resources={"master": {"gpu": 1}}), comp).uses_gpu
    message = (
        "component rules@1.0.0 runs only on GPU machines (constraints.machineType: "
        "[gpu]); give a role gpu: 1"
    )
    assert kit.run_errors(run(resources={"master": {"cpu": 4}}), comp) == [
        ("spec.resources", message)
    ]
    assert kit.run_errors(run(), comp) == [("spec.resources", message)]


def test_multi_gpu_needs_gpu_machines(kit: Kit) -> None:
    errors = kit.component_errors(_constrained(machineType=["cpu"], multiGpu=True))
    assert errors == [
        (
            "spec.constraints.multiGpu",
            "multiGpu applies only to components that run on GPU machines",
        )
    ]


# -- ranges: priority (PAI DLC), restarts (ModelArts), uid (ModelArts/Octopus) ---------------------


@pytest.mark.parametrize("priority", range(1, 10))
def test_priority_1_to_9(kit: Kit, priority: int) -> None:
    assert kit.ok_run(run(priority=priority)).priority == priority


@pytest.mark.parametrize(
    ("priority", "message"),
    [
        (0, "0 is out of range: must be at least 1"),
        (10, "10 is out of range: must be at most 9"),
        (-50, "-50 is out of range: must be at least 1"),
        ("5", "expected an integer, got text '5'"),
        (5.0, "expected an integer, got a number 5.0"),
    ],
)
def test_priority_out_of_range(kit: Kit, priority: object, message: str) -> None:
    assert kit.run_errors(run(priority=priority)) == [("spec.priority", message)]


@pytest.mark.parametrize("restarts", [1, 3, 64, 128])
def test_max_restarts_1_to_128(kit: Kit, restarts: int) -> None:
    loaded = kit.ok_run(run(faultTolerance={"maxRestarts": restarts}))
    assert loaded.fault_tolerance is not None
    assert loaded.fault_tolerance.max_restarts == restarts


@pytest.mark.parametrize("restarts", [0, -1, 129, 1000])
def test_max_restarts_out_of_range(kit: Kit, restarts: int) -> None:
    errors = kit.run_errors(run(faultTolerance={"maxRestarts": restarts}))
    assert _paths(errors) == ["spec.faultTolerance.maxRestarts"]


def test_max_restarts_defaults_to_3(kit: Kit) -> None:
    loaded = kit.ok_run(run(faultTolerance={"unconditional": True}))
    assert loaded.fault_tolerance is not None
    assert (loaded.fault_tolerance.max_restarts, loaded.fault_tolerance.unconditional) == (3, True)


@pytest.mark.parametrize(("given", "seconds"), [(5, 5), ("6s", 6), ("30m", 1800), ("1h", 3600)])
def test_hang_timeout_is_a_duration_of_at_least_5s(kit: Kit, given: object, seconds: int) -> None:
    # the launcher restarts a replica silent this long (ModelArts' hang restart)
    loaded = kit.ok_run(run(faultTolerance={"maxRestarts": 3, "hangTimeout": given}))
    assert loaded.fault_tolerance is not None
    assert loaded.fault_tolerance.hang_timeout_seconds == seconds


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (4, "4 is out of range: must be at least 5"),
        ("3s", "'3s' is shorter than 5s"),
        ("soon", "'soon' is not valid"),
    ],
)
def test_hang_timeout_shorter_than_5s_or_not_a_duration(
    kit: Kit, given: object, message: str
) -> None:
    errors = kit.run_errors(run(faultTolerance={"hangTimeout": given}))
    assert _paths(errors) == ["spec.faultTolerance.hangTimeout"]
    assert errors[0][1].startswith(message), errors


@pytest.mark.parametrize("uid", [0, 1000, 65535])
def test_run_as_user_0_to_65535(kit: Kit, uid: int) -> None:
    assert kit.ok_run(run(runAsUser=uid)).run_as_user == uid


@pytest.mark.parametrize("uid", [-1, 65536, "1000", True])
def test_run_as_user_out_of_range(kit: Kit, uid: object) -> None:
    assert _paths(kit.run_errors(run(runAsUser=uid))) == ["spec.runAsUser"]


def test_run_as_user_defaults_to_1000(kit: Kit) -> None:
    assert kit.ok_run(run()).run_as_user == 1000


# -- customPortList (PAI DLC) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ports"),
    [
        ("10000", (10000,)),
        ("10000;10001-10010", tuple(range(10000, 10011))),
        ("23455;23457-23458", (23455, 23457, 23458)),
        ("8080;8080", (8080,)),
    ],
)
def test_custom_port_list_format(kit: Kit, text: str, ports: tuple[int, ...]) -> None:
    loaded = kit.ok_run(run(advanced={"customPortList": text, "createSvcForAllWorkers": False}))
    assert loaded.advanced.custom_ports == ports


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10000,10001", "is not valid: expected ports and ranges separated by ';'"),
        ("10000;", "is not valid: expected ports and ranges separated by ';'"),
        ("a-b", "is not valid: expected ports and ranges separated by ';'"),
        ("10000 ;10001", "is not valid: expected ports and ranges separated by ';'"),
        ("10010-10001", "'10010-10001': the range ends before it starts"),
        ("0", "'0': ports are 1-65535"),
        ("65536", "'65536': ports are 1-65535"),
        ("23456", "must not include 23456"),
        ("23000-24000", "must not include 23456"),
        ("1-2000", "more than 1024 ports"),
    ],
)
def test_custom_port_list_rejected(kit: Kit, text: str, message: str) -> None:
    errors = kit.run_errors(run(advanced={"customPortList": text}))
    assert _paths(errors) == ["spec.advanced.customPortList"]
    assert message in errors[0][1]


def test_advanced_ports_apply_only_to_pytorch(kit: Kit) -> None:
    comp = component(jobType="xgboost")
    errors = kit.run_errors(run(advanced={"customPortList": "10000"}), comp)
    assert errors == [
        (
            "spec.advanced.customPortList",
            "customPortList applies only to pytorch jobs; rules@1.0.0 is xgboost",
        )
    ]


# -- spot (PAI DLC) -----------------------------------------------------------------------------


@pytest.mark.parametrize("discount", [10, 20, 30, 40, 50, 60, 70, 80, 90])
def test_spot_bid_discount_10_to_90_percent(kit: Kit, discount: int) -> None:
    loaded = kit.ok_run(run(spot={"bidDiscount": discount}))
    assert loaded.spot is not None and loaded.spot.bid_discount == discount


@pytest.mark.parametrize("discount", [0, 5, 15, 95, 100, "30%", 0.3])
def test_spot_bid_discount_rejected(kit: Kit, discount: object) -> None:
    assert _paths(kit.run_errors(run(spot={"bidDiscount": discount}))) == ["spec.spot.bidDiscount"]


def test_spot_bid_price_and_forms(kit: Kit) -> None:
    loaded = kit.ok_run(run(spot={"bidPrice": 2}))
    assert loaded.spot is not None and loaded.spot.bid_price == 2.0
    assert kit.ok_run(run(spot=True)).spot is not None
    assert kit.ok_run(run(spot=False)).spot is None
    assert _paths(kit.run_errors(run(spot={"bidPrice": 0}))) == ["spec.spot.bidPrice"]
    assert kit.run_errors(run(spot={"bidPrice": 1, "bidDiscount": 50})) == [
        ("spec.spot", "give either bidDiscount or bidPrice, not both")
    ]


# -- env and the contract ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["PAI_HPS_EPOCHS", "PAI_ANYTHING", "TRAINSTACK_ROLE", "NVIDIA_VISIBLE_DEVICES", "METRICS"],
)
def test_env_must_not_override_the_contract(kit: Kit, name: str) -> None:
    errors = kit.run_errors(run(env={name: "x"}))
    assert errors == [
        (f"spec.env.{name}", f"{name} is set by trainstack's contract and cannot be overridden")
    ]


@pytest.mark.parametrize("name", ["MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED"])
def test_env_must_not_override_what_kubedl_sets(kit: Kit, name: str) -> None:
    errors = kit.run_errors(run(env={name: "x"}))  # a pytorch component
    assert errors == [
        (f"spec.env.{name}", f"{name} is set by KubeDL for a pytorch job and cannot be overridden")
    ]


def test_component_parameters_reach_the_run_as_typed_values(kit: Kit) -> None:
    loaded = kit.ok_run(run(parameters={"lr": 1, "tag": "x y;$z"}))
    assert loaded.parameters == {
        "epochs": 10,
        "lr": 1.0,
        "optimizer": "adam",
        "tag": "x y;$z",
        "amp": False,
    }
    assert isinstance(loaded.parameters["lr"], float)


def test_unknown_parameter_and_channel_suggest_names(kit: Kit) -> None:
    errors = kit.run_errors(
        run(
            parameters={"epoch": 3},
            inputs={"trian": "oss://b1/x/"},
            outputs={"models": "oss://b1/m/"},
        )
    )
    assert sorted(errors) == [
        ("spec.inputs.trian", "component rules@1.0.0 has no input channel 'trian'"),
        ("spec.outputs.models", "component rules@1.0.0 has no output channel 'models'"),
        ("spec.parameters.epoch", "component rules@1.0.0 has no parameter 'epoch'"),
    ]
    assert _hints(kit.root / "run.yaml") == {
        "spec.inputs.trian": "did you mean 'train'?",
        "spec.outputs.models": "did you mean 'model'?",
        "spec.parameters.epoch": "did you mean 'epochs'?",
    }


def test_unset_spec_keys_are_not_required(kit: Kit) -> None:
    comp = component(
        {"spec": {"inputs": DELETE, "outputs": DELETE, "parameters": DELETE, "constraints": DELETE}}
    )
    loaded = kit.ok_component(comp)
    assert (loaded.inputs, loaded.outputs, loaded.parameters) == ((), (), ())
    assert loaded.constraints.multi_node and loaded.constraints.multi_gpu


# -- a released version is immutable: name@version is defined once (PAI Designer: versioning) -----


def test_a_name_at_version_is_defined_once(tmp_path: Path) -> None:
    root = tmp_path / "components"
    write_yaml(root / "a" / "component.yaml", COMPONENT)
    write_yaml(root / "b" / "component.yaml", component({"metadata": {"description": "edited"}}))
    write_yaml(root / "a" / "runs" / "r.yaml", run(component="rules@1.0.0"))
    report = validate([root])
    got = [(Path(d.file).name, d.path, d.message) for d in report.diagnostics]
    assert (
        "component.yaml",
        "metadata.version",
        f"rules@1.0.0 is also defined in {root / 'a' / 'component.yaml'}; a name@version "
        "must be defined once",
    ) in got
    assert (
        "r.yaml",
        "spec.component",
        f"rules@1.0.0 is defined 2 times ({root / 'a' / 'component.yaml'}, "
        f"{root / 'b' / 'component.yaml'}); which one is meant is ambiguous",
    ) in got
    assert len(got) == 2


def test_a_name_reference_builds_only_the_components_of_that_name(tmp_path: Path) -> None:
    """Resolving `name@version` used to check and build every component in the tree (a new
    Loader per spec does it again); only the files whose metadata names it are built now, and
    what is found, refused and suggested is the same."""
    from trainstack.spec.model import Run

    root = tmp_path / "components"
    write_yaml(root / "a" / "component.yaml", COMPONENT)
    write_yaml(root / "b" / "component.yaml", component({"metadata": {"name": "other"}}))
    write_yaml(root / "c" / "component.yaml", {"metadata": {"name": "rules"}, "spec": 1})
    write_yaml(root / "a" / "runs" / "r.yaml", run(component="rules@1.0.0"))
    loader = Loader()
    loaded = loader.load(root / "a" / "runs" / "r.yaml")
    assert isinstance(loaded, Run) and loaded.component.name == "rules"
    built = sorted(p.parent.name for p in loader._components)
    assert built == ["a", "c"]  # c says "rules" and does not build: passed over, as before
    write_yaml(root / "a" / "runs" / "s.yaml", run(component="rulez@1.0.0"))
    with pytest.raises(SpecError) as err:
        Loader().load(root / "a" / "runs" / "s.yaml")
    assert "no component named 'rulez'" in err.value.render()
    assert "did you mean 'rules'?" in err.value.render()
