"""Platform config: typed, checked, one clear error naming the key (no Pulumi needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainstack.envfile import find_project, read_env
from trainstack.errors import ConfigError
from trainstack.infra.platform.config import PlatformConfig
from trainstack.infra.platform.config import load as load_config

REPO = Path(__file__).resolve().parents[2]
ROOT: dict[str, Path] = {}
READY: dict[str, dict[str, str]] = {}


@pytest.fixture(autouse=True)
def _set_up(kubedl_root: Path, ready: dict[str, dict[str, str]]) -> None:
    ROOT["root"] = kubedl_root
    READY.update(ready)


def shipped(env: str) -> tuple[dict[str, str], frozenset[str]]:
    """A shipped environment, set up for `pulumi up` (conftest.READY)."""
    cfg = read_env(find_project(REPO), env)
    return ({**cfg.values, **READY[env]}, cfg.secret_keys | {"trainstack:registryPassword"})


def load(values: dict[str, str], **kwargs: object) -> PlatformConfig:
    return load_config(values, root=ROOT["root"], **kwargs)  # type: ignore[arg-type]


def load_with(env: str, drop: tuple[str, ...] = (), **changes: object) -> PlatformConfig:
    values, secret = shipped(env)
    for key in drop:
        del values[key]
    for key, value in changes.items():
        key = key.replace("__", ":")
        values[key] = value if isinstance(value, str) else json.dumps(value)
    return load(values, stack=env, source=f"Pulumi.{env}.yaml", secret_keys=secret)


def error_of(env: str, drop: tuple[str, ...] = (), **changes: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_with(env, drop, **changes)
    return caught.value


def test_shipped_local_env_loads() -> None:
    cfg = load_with("local")
    assert cfg.mode == "kubeconfig" and cfg.ack is None
    assert cfg.cluster is not None and cfg.cluster.context == "kind-trainstack"
    assert [t.namespace for t in cfg.teams] == ["vision", "nlp"]
    assert cfg.kubedl.version == "v0.5.0" and cfg.kubedl.gang_scheduler is None
    with pytest.raises(AttributeError):
        cfg.mode = "ack"  # type: ignore[misc]  # frozen


def test_shipped_ack_env_loads() -> None:
    cfg = load_with("ack-dev")
    assert cfg.ack is not None and cfg.ack.region == "cn-hangzhou"
    assert [p.name for p in cfg.ack.gpu_pools] == ["a10", "v100"]
    assert cfg.ack.spot_pool is not None and cfg.ack.spot_pool.spot_price_limit == "5.0"
    assert cfg.registry.server == "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com"
    assert cfg.kubedl.gang_scheduler == "kube-coscheduler"


def test_region_outside_the_supported_list_is_refused_with_a_suggestion() -> None:
    err = error_of("ack-dev", trainstack__region="cn-hangzou")
    assert "trainstack:region" in err.message
    assert "cn-beijing, cn-shanghai, cn-hangzhou, cn-shenzhen" in err.message
    assert err.hint == "did you mean 'cn-hangzhou'?"
    assert "us-west-1" in error_of("ack-dev", trainstack__region="us-west-1").message


def test_unknown_key_gets_did_you_mean() -> None:
    values, secret = shipped("ack-dev")
    values["trainstack:gpuPool"] = values.pop("trainstack:gpuPools")
    with pytest.raises(ConfigError) as caught:
        load(values, stack="ack-dev", source="Pulumi.ack-dev.yaml", secret_keys=secret)
    # The missing gpuPools is reported first; with both, the typo is named.
    assert "trainstack:gpuPools" in caught.value.message
    values["trainstack:gpuPools"] = values["trainstack:gpuPool"]
    with pytest.raises(ConfigError) as caught:
        load(values, stack="ack-dev", source="Pulumi.ack-dev.yaml", secret_keys=secret)
    assert caught.value.message == "Pulumi.ack-dev.yaml: trainstack:gpuPool: unknown key"
    assert caught.value.hint == "did you mean 'gpuPools'?"


def test_nested_typo_names_the_full_path() -> None:
    pools = [{"name": "a10", "instanceTypes": ["ecs.gn7i-c8g1.2xlarge"], "maxsize": 4}]
    err = error_of("ack-dev", trainstack__gpuPools=pools)
    assert "trainstack:gpuPools[0].maxsize: unknown key" in err.message
    assert err.hint == "did you mean 'maxSize'?"


def test_cloud_keys_are_refused_in_kubeconfig_mode() -> None:
    err = error_of("local", trainstack__region="cn-hangzhou")
    assert err.message == (
        "Pulumi.local.yaml: trainstack:region: only used when trainstack:mode is ack"
    )


def test_password_in_plain_text_is_refused() -> None:
    values, _ = shipped("local")
    with pytest.raises(ConfigError) as caught:
        load(values, stack="local", source="Pulumi.local.yaml", secret_keys=frozenset())
    assert "trainstack:registryPassword" in caught.value.message
    assert "secret" in caught.value.message
    assert "pulumi config set --secret" in (caught.value.hint or "")
    assert "plan-secret-placeholder" not in caught.value.render()


def test_missing_password_names_the_command() -> None:
    err = error_of("local", drop=("trainstack:registryPassword",))
    assert "trainstack:registryPassword: expected a secret, but it is missing" in err.message


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"trainstack__mode": "eks"}, "trainstack:mode: expected one of ack, kubeconfig"),
        ({"trainstack__teams": []}, "trainstack:teams: expected a list of objects (at least 1)"),
        (
            {"trainstack__teams": [{"name": "Vision", "quota": {"cpu": 1, "memory": "1Gi"}}]},
            "trainstack:teams[0].name",
        ),
        (
            {"trainstack__teams": [{"name": "kube-x", "quota": {"cpu": 1, "memory": "1Gi"}}]},
            "trainstack:teams[0].namespace",
        ),
        (
            {"trainstack__teams": [{"name": "a", "quota": {"cpu": "lots", "memory": "1Gi"}}]},
            "trainstack:teams[0].quota.cpu: expected a Kubernetes quantity",
        ),
        ({"kubedl__version": "latest"}, "kubedl:version: expected a pinned release tag"),
        ({"kubedl__image": "kubedl/kubedl:latest"}, "kubedl:image: expected a pinned tag"),
        ({"kubedl__workloads": ["PytorchJob"]}, "kubedl:workloads"),
        ({"kubedl__gangScheduler": "yunikorn"}, "kubedl:gangScheduler"),
    ],
)
def test_wrong_values_are_one_clear_error(changes: dict[str, object], needle: str) -> None:
    assert needle in error_of("local", **changes).message


def test_workload_typo_suggests_the_kind() -> None:
    assert (
        error_of("local", kubedl__workloads="TFJob,PytorchJob").hint == "did you mean 'PyTorchJob'?"
    )


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"trainstack__zones": ["cn-beijing-a"]}, "trainstack:zones: expected a list of zone ids"),
        ({"trainstack__vswitchCidrs": ["10.1.0.0/16"]}, "one per zone (at least 2)"),
        (
            {"trainstack__vswitchCidrs": ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"]},
            "exactly 2 CIDR blocks",
        ),
        ({"trainstack__vswitchCidrs": ["10.1.0.0/16", "192.168.0.0/16"]}, "inside vpcCidr"),
        (
            {"trainstack__serviceCidr": "10.9.0.0/20"},
            "trainstack:serviceCidr: expected a block outside",
        ),
        (
            {
                "trainstack__gpuPools": [
                    {"name": "a", "instanceTypes": ["ecs.x.y"], "minSize": 5, "maxSize": 2}
                ]
            },
            "trainstack:gpuPools[0].minSize",
        ),
        (
            {"trainstack__gpuPools": [{"name": "a", "instanceTypes": ["gn7i"]}]},
            "trainstack:gpuPools[0].instanceTypes",
        ),
        ({"trainstack__bucketPrefix": "Acme_Bad"}, "trainstack:bucketPrefix"),
    ],
)
def test_wrong_cloud_values_are_one_clear_error(changes: dict[str, object], needle: str) -> None:
    assert needle in error_of("ack-dev", **changes).message


def test_numbers_may_arrive_as_strings_or_floats() -> None:
    pools = [
        {"name": "a10", "instanceTypes": ["ecs.gn7i-c8g1.2xlarge"], "minSize": "1", "maxSize": 3.0}
    ]
    cfg = load_with("ack-dev", trainstack__gpuPools=pools)
    assert cfg.ack is not None
    assert (cfg.ack.gpu_pools[0].min_size, cfg.ack.gpu_pools[0].max_size) == (1, 3)


OSS_KEYS = ("trainstack:ossAccessKeyId", "trainstack:ossAccessKeySecret")
# The one shared key is a single team's: Pulumi.local.yaml with only its first team.
ONE_TEAM = json.dumps([{"name": "vision", "quota": {"cpu": "16", "memory": "64Gi"}}])


def load_oss(env: str, keys: tuple[str, ...], secret: tuple[str, ...]) -> PlatformConfig:
    values, secret_keys = shipped(env)
    values |= {k: f"value-of-{k}" for k in keys}
    if env == "local":
        values["trainstack:teams"] = ONE_TEAM
        if keys:
            values["trainstack:ossEndpoint"] = "oss-cn-beijing.aliyuncs.com"
    return load(
        values, stack=env, source=f"Pulumi.{env}.yaml", secret_keys=secret_keys | frozenset(secret)
    )


def test_oss_access_key_is_optional_and_both_secret_keys_enable_it() -> None:
    assert load_with("local").oss_keys is None
    keys = load_oss("local", OSS_KEYS, OSS_KEYS).oss_keys
    assert keys is not None and keys.teams == ("vision",) and keys.shared


def test_half_an_oss_access_key_names_the_missing_key() -> None:
    with pytest.raises(ConfigError) as caught:
        load_oss("local", OSS_KEYS[:1], OSS_KEYS[:1])
    assert (
        "trainstack:ossAccessKeySecret: expected a secret, but it is missing"
        in caught.value.message
    )
    assert "pulumi config set --secret trainstack:ossAccessKeySecret" in (caught.value.hint or "")


def test_oss_access_key_in_plain_text_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_oss("local", OSS_KEYS, OSS_KEYS[:1])
    assert caught.value.message == (
        "Pulumi.local.yaml: trainstack:ossAccessKeySecret: is set in "
        "plain text; it must be a secret"
    )


def test_oss_access_key_is_refused_in_ack_mode() -> None:
    with pytest.raises(ConfigError) as caught:
        load_oss("ack-dev", OSS_KEYS, OSS_KEYS)
    assert "trainstack:ossAccessKeyId: not used when trainstack:mode is ack" in caught.value.message
    assert "RRSA" in caught.value.message
