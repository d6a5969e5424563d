"""What Alibaba Cloud would refuse, or take and then not work with, that Pulumi's mocks accept.

Each rule is the provider's own (the pulumi_alicloud docstring named in the program's comment) or
a cross-resource fact: the program, under the mocks, must only register values the real provider
and API take. Config that cannot produce such values is refused up front with one ConfigError.
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.rpc import unwrap_rpc_secret

from tests.infra.conftest import RecordingMocks
from trainstack.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
POOL = "alicloud:cs/nodePool:NodePool"
DIGEST = "@sha256:" + "cd" * 32
# The registry the ack-dev program creates under the mocks' stack name ("test").
SERVER = "trainstack-test-registry-vpc.cn-hangzhou.cr.aliyuncs.com"


def refused(mocks: RecordingMocks, **overrides: str) -> str:
    mocks.use_env("ack-dev", **overrides)
    with pytest.raises(ConfigError) as caught:
        mocks.build()
    return caught.value.render()


# --- KubeDL's controller pulls from the private registry -----------------------------------------


def test_the_kubedl_controller_pulls_the_platforms_acr_without_a_password(
    mocks: RecordingMocks,
) -> None:
    """The instance's login password can push: it stays out of the cluster. The controller
    pulls with the credential helper's pull-only tokens, which watches its namespace, and is
    created after the helper."""
    mocks.use_env("ack-dev", **{"kubedl:image": f"{SERVER}/acme/kubedl{DIGEST}"})
    mocks.build()
    controller = mocks.one("kubernetes:apps/v1:Deployment", "kubedl-controller")
    namespace = controller["metadata"]["namespace"]
    assert "imagePullSecrets" not in controller["spec"]["template"]["spec"]
    assert not [
        r for r in mocks.of_type("kubernetes:core/v1:Secret") if r.name == "kubedl-pull-secret"
    ]
    helper = mocks.one("alicloud:cs/kubernetesAddon:KubernetesAddon", "acr-credential-helper")
    assert namespace in json.loads(helper["config"])["watchNamespace"].split(",")


def test_the_kubedl_controller_pulls_an_external_registry_with_a_secret_of_its_own(
    mocks: RecordingMocks,
) -> None:
    server = "registry.example.com"
    mocks.use_env("local", **{"kubedl:image": f"{server}/acme/kubedl{DIGEST}"})
    mocks.build()
    controller = mocks.one("kubernetes:apps/v1:Deployment", "kubedl-controller")
    namespace = controller["metadata"]["namespace"]
    pod = controller["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "trainstack-registry"}]
    secret = mocks.one("kubernetes:core/v1:Secret", "kubedl-pull-secret")
    assert secret["metadata"] == {"name": "trainstack-registry", "namespace": namespace}
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    payload = json.loads(unwrap_rpc_secret(secret["stringData"])[".dockerconfigjson"])
    assert list(payload["auths"]) == [server]


def test_kubedl_gets_no_pull_secret_without_a_controller_or_for_another_registry(
    mocks: RecordingMocks,
) -> None:
    values = dict(mocks.use_env("ack-dev"))  # conftest's image: a registry of one's own
    mocks.build()
    controller = mocks.one("kubernetes:apps/v1:Deployment", "kubedl-controller")
    assert "imagePullSecrets" not in controller["spec"]["template"]["spec"]
    del values["kubedl:image"]
    mocks.configure(values, ["trainstack:registryPassword"])
    mocks.build()
    secrets = [r.name for r in mocks.of_type("kubernetes:core/v1:Secret")]
    assert secrets and not [name for name in secrets if name.startswith("kubedl")]


# --- an image on the platform's registry is in a repository it creates ----------------------------


def test_kubedl_image_on_the_platform_registry_must_name_its_namespace_and_repository(
    mocks: RecordingMocks,
) -> None:
    message = refused(mocks, **{"kubedl:image": f"{SERVER}/platform/kubedl{DIGEST}"})
    assert "kubedl:image" in message and f"{SERVER}/acme/kubedl" in message
    message = refused(mocks, **{"kubedl:image": f"{SERVER}/acme/kubedl-controller{DIGEST}"})
    assert "registryRepos" in message
    public = SERVER.replace("-registry-vpc.", "-registry.")
    assert "kubedl:image" in refused(mocks, **{"kubedl:image": f"{public}/other/kubedl{DIGEST}"})


def test_the_shipped_environment_says_to_mirror_into_the_namespace_it_creates() -> None:
    text = (REPO / "Pulumi.ack-dev.yaml").read_text()
    config = yaml.safe_load(text)["config"]
    (line,) = [x for x in text.splitlines() if x.startswith("#") and "kubedl:image" in x]
    path = re.search(r"<registry>/(\S+)@sha256", line)
    assert path, line
    namespace, repo = path.group(1).split("/")
    assert namespace == config["trainstack:registryNamespace"]
    assert repo in config["trainstack:registryRepos"]


# --- node pools ----------------------------------------------------------------------------------


def test_an_autoscaled_pool_has_room_to_scale(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    mocks.build()
    scaling = [
        p.inputs["scalingConfig"] for p in mocks.of_type(POOL) if "scalingConfig" in p.inputs
    ]
    assert scaling and all(s["maxSize"] > s["minSize"] for s in scaling)
    message = refused(
        mocks,
        **{
            "trainstack:cpuPool": json.dumps(
                {"instanceTypes": ["ecs.g7.2xlarge"], "minSize": 3, "maxSize": 3}
            )
        },
    )
    assert "trainstack:cpuPool.minSize" in message and "less than maxSize (3)" in message


# --- names the APIs refuse -----------------------------------------------------------------------

# ecs/ecs_key_pair.py key_pair_name; nas/file_system.py description.
KEY_PAIR_NAME = r"[A-Za-z][A-Za-z0-9:_-]{1,127}"
NAS_DESCRIPTION = r"[A-Za-z][A-Za-z0-9:_-]{1,127}"


def test_key_pair_name_and_nas_description_are_what_the_apis_take(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    mocks.build()
    (key_pair,) = mocks.of_type("alicloud:ecs/ecsKeyPair:EcsKeyPair")
    assert re.fullmatch(KEY_PAIR_NAME, key_pair.inputs["keyPairName"])
    nas = mocks.one("alicloud:nas/fileSystem:FileSystem", "nas")
    assert re.fullmatch(NAS_DESCRIPTION, nas["description"]), nas["description"]


def test_a_cluster_name_starting_with_a_digit_is_refused(mocks: RecordingMocks) -> None:
    message = refused(mocks, **{"trainstack:clusterName": "1dev"})
    assert "trainstack:clusterName" in message and "starting with a letter" in message


@pytest.mark.parametrize("namespace", ["acme-", "acme_", "-acme", "a"])
def test_an_acr_namespace_starts_and_ends_with_a_letter_or_digit(
    mocks: RecordingMocks, namespace: str
) -> None:
    assert "trainstack:registryNamespace" in refused(
        mocks, **{"trainstack:registryNamespace": namespace}
    )


# --- VPC and vSwitch blocks -----------------------------------------------------------------------


def test_the_shipped_blocks_have_masks_the_vpc_api_takes(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    mocks.build()
    vpc = ipaddress.IPv4Network(mocks.one("alicloud:vpc/network:Network", "vpc")["cidrBlock"])
    assert 8 <= vpc.prefixlen <= 28
    for switch in mocks.of_type("alicloud:vpc/switch:Switch"):
        assert 16 <= ipaddress.IPv4Network(switch.inputs["cidrBlock"]).prefixlen <= 29


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"trainstack:vswitchCidrs": '["10.1.0.0/30", "10.2.0.0/16"]'}, "/16 to /29"),
        ({"trainstack:vswitchCidrs": '["10.0.0.0/9", "10.128.0.0/9"]'}, "/16 to /29"),
        (
            {
                "trainstack:vpcCidr": "192.168.0.0/29",
                "trainstack:vswitchCidrs": '["192.168.0.0/29", "192.168.0.0/29"]',
            },
            "/8 to /28",
        ),
        (
            {
                "trainstack:vpcCidr": "100.64.0.0/16",
                "trainstack:vswitchCidrs": '["100.64.1.0/24", "100.64.2.0/24"]',
            },
            "100.64.0.0/10",
        ),
    ],
)
def test_blocks_the_vpc_api_refuses_are_refused(
    mocks: RecordingMocks, changes: dict[str, str], needle: str
) -> None:
    message = refused(mocks, **changes)
    assert needle in message


def test_blocks_are_passed_on_in_cidr_notation(mocks: RecordingMocks) -> None:
    """A bare address or a netmask reads fine in Python; the VPC and SLB APIs take a.b.c.d/n."""
    mocks.use_env(
        "ack-dev",
        **{
            "trainstack:apiAllowedCidrs": '["198.51.100.7", "203.0.113.0/255.255.255.0"]',
            "trainstack:vswitchCidrs": '["10.1.0.0/255.255.0.0", "10.2.0.0/16"]',
        },
    )
    mocks.build()
    entries = [
        r.inputs["entry"]
        for r in mocks.of_type("alicloud:slb/aclEntryAttachment:AclEntryAttachment")
    ]
    # after the blocks the cluster needs (ACK's control plane, the VPC: cluster.required_api_cidrs)
    assert entries == ["100.104.0.0/16", "10.0.0.0/8", "198.51.100.7/32", "203.0.113.0/24"]
    switches = [r.inputs["cidrBlock"] for r in mocks.of_type("alicloud:vpc/switch:Switch")]
    assert switches == ["10.1.0.0/16", "10.2.0.0/16", "10.101.0.0/16", "10.102.0.0/16"]


# --- the ACR Enterprise login password ------------------------------------------------------------


@pytest.mark.parametrize(
    "password", ["Sh0rt!", "x" * 33, "onlyletterslong", "1234567890", "a1" * 17]
)
def test_an_acr_login_password_the_instance_refuses_is_refused_unshown(
    mocks: RecordingMocks, password: str
) -> None:
    message = refused(mocks, **{"trainstack:registryPassword": password})
    assert "trainstack:registryPassword" in message and "8 to 32" in message
    assert password not in message


def test_an_acr_login_password_of_two_kinds_is_taken(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev", **{"trainstack:registryPassword": "letters-and-symbols"})
    mocks.build()
    (instance,) = mocks.of_type("alicloud:cr/registryEnterpriseInstance:RegistryEnterpriseInstance")
    assert unwrap_rpc_secret(instance.inputs["password"]) == "letters-and-symbols"


@pytest.mark.parametrize(
    ("blocks", "needle"),
    [
        (["198.51.100.7", "198.51.100.7/32"], "each block once"),
        # 300 entries per ACL, two of them the control plane's and the VPC's
        ([f"10.{i // 256}.{i % 256}.0/24" for i in range(299)], "at most 298 blocks"),
    ],
)
def test_an_allow_list_the_acl_cannot_hold_is_refused(
    mocks: RecordingMocks, blocks: list[str], needle: str
) -> None:
    message = refused(mocks, **{"trainstack:apiAllowedCidrs": json.dumps(blocks)})
    assert "trainstack:apiAllowedCidrs" in message and needle in message


# --- the API server's load balancer the allow-list is bound to ---------------------------------


def test_the_api_load_balancer_output_is_the_load_balancers_id(
    mocks: RecordingMocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the provider reports (alicloud/resource_alicloud_cs_kubernetes.go, read): slbId is
    the API server's CLB (DescribeClusterResources), slbIntranet the internal endpoint's IP."""
    recorded = mocks.new_resource

    def new_resource(args: Any) -> tuple[str, dict[str, Any]]:
        rid, state = recorded(args)
        if args.typ == "alicloud:cs/managedKubernetes:ManagedKubernetes":
            state |= {"slbId": "lb-bp1apiserver0001", "slbIntranet": "10.1.0.12"}
        return rid, state

    monkeypatch.setattr(mocks, "new_resource", new_resource)
    mocks.use_env("ack-dev")
    outputs = mocks.build()
    value, _ = mocks.resolve(outputs["apiLoadBalancer"])
    assert value == "lb-bp1apiserver0001", "SetLoadBalancerTCPListenerAttribute --LoadBalancerId"


# --- the node key pair --------------------------------------------------------------------------


def test_an_ed25519_node_key_is_refused_as_importkeypair_refuses_it(mocks: RecordingMocks) -> None:
    """ECS ImportKeyPair takes rsa, dsa and ecdsa keys only (its API reference lists rsa, dsa,
    ssh-rsa, ssh-dss, ecdsa and their certificates); an ed25519 key would fail `pulumi up`."""
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTestsOnly ops@acme"
    message = refused(mocks, **{"trainstack:nodePublicKey": key})
    assert "trainstack:nodePublicKey" in message and "ImportKeyPair" in message
    assert "ssh-keygen -t rsa" in message


@pytest.mark.parametrize(
    "key",
    [
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCFakeKeyForTestsOnly ops@acme",
        "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYFakeKeyForTestsOnly ops@acme",
    ],
)
def test_rsa_and_ecdsa_node_keys_are_taken(mocks: RecordingMocks, key: str) -> None:
    mocks.use_env("ack-dev", **{"trainstack:nodePublicKey": key})
    mocks.build()
    assert mocks.one("alicloud:ecs/ecsKeyPair:EcsKeyPair", "node-key-pair")["publicKey"] == key


# --- the registry's internet endpoint ----------------------------------------------------------


def test_the_registry_has_no_internet_endpoint_unless_sources_are_listed(
    mocks: RecordingMocks,
) -> None:
    """A new ACR Enterprise instance admits no traffic until an access mode is enabled (ACR
    "Network access control overview"): the VPC link lets nodes pull; pushing from outside the
    VPC (mirroring KubeDL's image) needs the internet endpoint, for the listed sources only."""
    mocks.use_env("ack-dev")
    mocks.build()
    assert mocks.of_type("alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc")
    assert not mocks.of_type("alicloud:cr/internetEndpoint:InternetEndpoint")


def test_listed_sources_reach_the_registry_over_the_internet(mocks: RecordingMocks) -> None:
    mocks.use_env(
        "ack-dev", **{"trainstack:registryAllowedCidrs": '["198.51.100.7", "203.0.113.0/24"]'}
    )
    mocks.build()
    endpoint = mocks.one("alicloud:cr/internetEndpoint:InternetEndpoint", "acr-internet")
    assert [e["entry"] for e in endpoint["entries"]] == ["198.51.100.7/32", "203.0.113.0/24"]


@pytest.mark.parametrize(
    ("blocks", "said"),
    [
        ('["0.0.0.0/0"]', "narrower than the whole internet"),
        ('["198.51.100.7", "198.51.100.7/32"]', "each block once"),
        ("[]", "trainstack:registryAllowedCidrs"),
    ],
)
def test_a_registry_allow_list_is_checked_like_the_apis(
    mocks: RecordingMocks, blocks: str, said: str
) -> None:
    assert said in refused(mocks, **{"trainstack:registryAllowedCidrs": blocks})


def test_an_external_registry_takes_no_allow_list(mocks: RecordingMocks) -> None:
    message = refused(
        mocks,
        **{
            "trainstack:registryType": "external",
            "trainstack:registryServer": "registry.example.com",
            "trainstack:registryAllowedCidrs": '["198.51.100.7/32"]',
        },
    )
    assert "no allow-list with registryType external" in message
