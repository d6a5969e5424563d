"""What the platform must provide and refuse, each checked on its plan (``trainstack plan --json``).

Two kinds of project: the repository as shipped (a new environment: the plan runs offline and
lists what is still to set up), and a copy set up as for ``pulumi up`` — the READY values of
conftest, and a CRD folder mirrored from a fake release (small CRDs shaped like KubeDL's, with
their own lock; KubeDL's files are never copied into this repository).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clirunner import Cli

REPO = Path(__file__).resolve().parents[2]
CIPHERTEXT = "v1:cmVhZHk=:cmVhZHktcGFzc3dvcmQtY2lwaGVydGV4dA=="
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
POOL = "alicloud:cs/nodePool:NodePool"


def plan(*args: str) -> dict[str, Any]:
    result = Cli().invoke("plan", *args, "--json")
    assert result.code == 0, result.output
    return json.loads(result.out)  # type: ignore[no-any-return]


def ready_project(
    root: Path, mirrored: Path, ready: dict[str, dict[str, str]], env: str, **changes: Any
) -> Path:
    """A copy of the project with ``env`` set up for `pulumi up` (and ``changes`` applied)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(mirrored / "platform", root / "platform", dirs_exist_ok=True)
    data = yaml.safe_load((REPO / f"Pulumi.{env}.yaml").read_text())
    config = data["config"]
    for key, value in ready[env].items():
        config[key] = json.loads(value) if value[:1] in "[{" else value
    config["trainstack:registryPassword"] = {"secure": CIPHERTEXT}
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    # A round trip through JSON unshares equal values, so the dump has no YAML aliases, which
    # stack config files may not use.
    plain = json.loads(json.dumps(data))
    (root / f"Pulumi.{env}.yaml").write_text(yaml.safe_dump(plain, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def planned(
    tmp_path_factory: pytest.TempPathFactory, kubedl_root: Path, ready: dict[str, dict[str, str]]
) -> Callable[[str], dict[str, Any]]:
    """`trainstack plan --env ENV` of the platform in a ready copy of the project: planned once
    per module and environment (a plan takes seconds), each test given a copy of its own."""
    plans: dict[str, dict[str, Any]] = {}

    def of(env: str) -> dict[str, Any]:
        if env not in plans:
            root = ready_project(tmp_path_factory.mktemp(env), kubedl_root, ready, env)
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(root)
                plans[env] = plan("--env", env)
        return copy.deepcopy(plans[env])

    return of


@pytest.fixture
def ack(planned: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return planned("ack-dev")


@pytest.fixture
def local(planned: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return planned("local")


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def named(doc: dict[str, Any], name: str, type_: str | None = None) -> dict[str, Any]:
    found = [
        r for r in doc["resources"] if r["name"] == name and (type_ is None or r["type"] == type_)
    ]
    assert len(found) == 1, f"{name}: {len(found)} resources"
    return found[0]


def of_type(doc: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in doc["resources"] if r["type"] == type_]


def labels(pool: dict[str, Any]) -> dict[str, str]:
    return {item["key"]: item["value"] for item in pool["inputs"]["labels"]}


# --- would fail on the first run ---------------------------------------------------------------


def test_api_endpoint_is_public_with_an_allow_list_or_private(
    ack: dict[str, Any],
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    managed = "alicloud:cs/managedKubernetes:ManagedKubernetes"
    cluster = named(ack, "cluster", managed)["inputs"]
    assert cluster["slbInternetEnabled"] is True, "pulumi up reaches the cluster it creates"
    entries = [
        r["inputs"]["entry"]
        for r in of_type(ack, "alicloud:slb/aclEntryAttachment:AclEntryAttachment")
    ]
    # ACK's control plane and the VPC first (cluster.required_api_cidrs), then the listed block
    assert entries == ["100.104.0.0/16", "10.0.0.0/8", "198.51.100.7/32"]
    assert {"apiAcl", "apiLoadBalancer"} <= set(ack["outputs"]), "what the binding step names"
    monkeypatch.chdir(
        ready_project(
            tmp_path / "private",
            kubedl_root,
            ready,
            "ack-dev",
            **{"trainstack:apiEndpoint": "private", "trainstack:apiAllowedCidrs": None},
        )
    )
    private = plan("--env", "ack-dev")
    assert named(private, "cluster", managed)["inputs"]["slbInternetEnabled"] is False
    assert not of_type(private, "alicloud:slb/acl:Acl")


def test_the_whole_internet_is_no_allow_list(
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(
        ready_project(
            tmp_path / "p",
            kubedl_root,
            ready,
            "ack-dev",
            **{"trainstack:apiAllowedCidrs": ["0.0.0.0/0"]},
        )
    )
    done = Cli().invoke("plan", "--env", "ack-dev")
    assert done.code != 0
    assert (
        "trainstack:apiAllowedCidrs: expected blocks narrower than the whole internet" in done.err
    )


def test_deployer_gets_cluster_admin_before_anything_on_the_cluster(ack: dict[str, Any]) -> None:
    permission = named(ack, "deployer-permission")
    assert permission["inputs"]["uid"] == "276543210987654"
    (grant,) = permission["inputs"]["permissions"]
    assert (grant["roleType"], grant["roleName"], grant["isRamRole"]) == ("cluster", "admin", True)
    provider = named(ack, "k8s", "pulumi:providers:kubernetes")
    assert (
        "alicloud:cs/kubernetesPermission:KubernetesPermission::deployer-permission"
        in provider["options"]["dependsOn"]
    )
    # and after the API allow-list is bound: nothing is created while the endpoint is open
    assert "command:local:Command::api-acl-binding" in provider["options"]["dependsOn"]
    binding = named(ack, "api-acl-binding", "command:local:Command")
    # off before on when a new ACL replaces it: create-before-delete would end with it off
    assert binding["options"]["deleteBeforeReplace"] is True
    assert sum(
        d.startswith("alicloud:slb/aclEntryAttachment") for d in binding["options"]["dependsOn"]
    ) == len(of_type(ack, "alicloud:slb/aclEntryAttachment:AclEntryAttachment"))


def test_registry_is_acr_enterprise_created_through_the_api(ack: dict[str, Any]) -> None:
    types = {r["type"] for r in ack["resources"]}
    # The personal edition (deprecated, console set-up first) is gone.
    assert not types & {"alicloud:cr/namespace:Namespace", "alicloud:cr/repo:Repo"}
    instance = named(ack, "acr-instance")["inputs"]
    assert (instance["instanceName"], instance["paymentType"]) == (
        "trainstack-ack-dev",
        "Subscription",
    )
    assert instance["password"] == "[secret]"
    assert named(ack, "acr-vpc-link")["inputs"]["moduleName"] == "Registry"
    assert (
        ack["outputs"]["registry"] == "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com"
    )


def test_a_registry_of_your_own_creates_nothing(
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(
        ready_project(
            tmp_path / "p",
            kubedl_root,
            ready,
            "ack-dev",
            **{
                "trainstack:registryType": "external",
                "trainstack:registryServer": "registry.example.com",
            },
        )
    )
    doc = plan("--env", "ack-dev")
    assert not [
        r
        for r in doc["resources"]
        if r["type"].startswith("alicloud:cr/") or "registryEnterprise" in r["type"]
    ]
    assert doc["outputs"]["registry"] == "registry.example.com"


def test_kubedl_crds_come_from_the_locked_folder_each_its_own_resource(in_repo: None) -> None:
    doc = plan("--env", "ack-dev")  # as shipped: nothing mirrored yet, offline
    text = json.dumps(doc)
    assert "githubusercontent" not in text and "kubernetes:yaml/v2:ConfigGroup" not in text
    lock = json.loads((REPO / "platform/kubedl/v0.5.0/kubedl.lock.json").read_text())
    crds = {
        r["inputs"]["metadata"]["name"]: r
        for r in of_type(doc, CRD)
        if r["parent"].startswith("trainstack:platform:KubeDL")
    }
    workloads = ["TFJob", "PyTorchJob", "XGBoostJob", "MPIJob", "ElasticBatchJob"]
    assert sorted(crds) == sorted(lock["crds"][w]["name"] for w in workloads)
    for kind in workloads:
        entry = lock["crds"][kind]
        crd = crds[entry["name"]]
        assert (
            crd["inputs"]["metadata"]["annotations"]["trainstack.dev/source-sha256"]
            == entry["sha256"]
        )
        assert crd["parent"] == "trainstack:platform:KubeDL::kubedl"
    assert any(
        "trainstack kubedl mirror" in step and "platform/kubedl/v0.5.0" in step
        for step in doc["pending"]
    )


def test_pulumi_up_refuses_unmirrored_crds_and_names_the_command() -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "local")
    values = {**cfg.values, "trainstack:registryPassword": "x"}
    with pytest.raises(ConfigError) as caught:
        load(
            values,
            stack="local",
            source="Pulumi.local.yaml",
            root=REPO,
            secret_keys=frozenset({"trainstack:registryPassword"}),
        )
    assert (
        "platform/kubedl/v0.5.0 does not hold training.kubedl.io_tfjobs.yaml"
        in caught.value.message
    )
    assert "trainstack kubedl mirror --from" in (caught.value.hint or "")


def test_kubedl_mirror_fills_the_folder_and_refuses_a_changed_file(
    tmp_path: Path, kubedl_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = kubedl_root / "platform/kubedl/v0.5.0/kubedl.lock.json"
    release = kubedl_root.parent / "release"
    target = tmp_path / "platform/kubedl/v0.5.0"
    target.mkdir(parents=True)
    shutil.copy(lock, target / "kubedl.lock.json")
    result = Cli().invoke("kubedl", "mirror", "--from", str(release), "--to", str(target))
    assert result.code == 0, result.output
    assert (target / "training.kubedl.io_tfjobs.yaml").read_bytes() == (
        release / "config/crd/bases/training.kubedl.io_tfjobs.yaml"
    ).read_bytes()
    assert "8 CRD files" in result.output
    tampered = tmp_path / "tampered"
    shutil.copytree(release, tampered)
    bad = tampered / "config/crd/bases/training.kubedl.io_mpijobs.yaml"
    bad.write_text(bad.read_text() + "# changed\n")
    (target / "training.kubedl.io_mpijobs.yaml").unlink()
    done = Cli().invoke("kubedl", "mirror", "--from", str(tampered), "--to", str(target))
    assert done.code == 2
    err = done.err
    assert "training.kubedl.io_mpijobs.yaml: sha256" in err and "does not match the lock" in err
    assert not (target / "training.kubedl.io_mpijobs.yaml").exists(), "never written unverified"


def test_kubedl_mirror_never_writes_through_a_link(tmp_path: Path, kubedl_root: Path) -> None:
    """A CRD file's name in the folder taken by a link is refused, and what
    the link points at is left as it was."""
    lock = kubedl_root / "platform/kubedl/v0.5.0/kubedl.lock.json"
    release = kubedl_root.parent / "release"
    target = tmp_path / "mirror"
    target.mkdir()
    shutil.copy(lock, target / "kubedl.lock.json")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (target / "training.kubedl.io_tfjobs.yaml").symlink_to(victim)
    done = Cli().invoke("kubedl", "mirror", "--from", str(release), "--to", str(target))
    assert done.code == 2, done.output
    assert "training.kubedl.io_tfjobs.yaml: it is a symbolic link, not a regular file" in done.err
    assert victim.read_text() == "mine\n"
    assert (target / "training.kubedl.io_tfjobs.yaml").is_symlink()


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        ("docker.io/kubedl/kubedl:0.4.2", "pinned by digest"),
        ("kubedl/kubedl@sha256:" + "ab" * 32, "not Docker Hub"),
        ("docker.io/kubedl/kubedl@sha256:" + "ab" * 32, "not Docker Hub"),
        ("acme-registry-vpc.cn-hangzhou.cr.aliyuncs.com/platform/kubedl:0.4.2", "pinned by digest"),
    ],
)
def test_kubedl_image_on_ack_is_a_digest_outside_docker_hub(
    image: str, needle: str, kubedl_root: Path, ready: dict[str, dict[str, str]]
) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "ack-dev")
    values = {**cfg.values, **ready["ack-dev"], "kubedl:image": image}
    with pytest.raises(ConfigError) as caught:
        load(
            values,
            stack="ack-dev",
            source="Pulumi.ack-dev.yaml",
            root=kubedl_root,
            secret_keys=frozenset({"trainstack:registryPassword"}),
        )
    assert "kubedl:image" in caught.value.message and needle in caught.value.message
    assert "docs/platform.md" in (caught.value.hint or "")


def test_a_first_run_without_the_image_installs_kubedl_but_not_its_controller(
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "ack-dev")
    values = {**cfg.values, **ready["ack-dev"]}
    del values["kubedl:image"]
    loaded = load(
        values,
        stack="ack-dev",
        source="Pulumi.ack-dev.yaml",
        root=kubedl_root,
        secret_keys=frozenset({"trainstack:registryPassword"}),
    )  # not offline
    assert loaded.kubedl.image is None
    assert any("kubedl:image is not set" in step for step in loaded.pending)
    monkeypatch.chdir(
        ready_project(tmp_path / "p", kubedl_root, ready, "ack-dev", **{"kubedl:image": None})
    )
    doc = plan("--env", "ack-dev")
    assert not of_type(doc, "kubernetes:apps/v1:Deployment")
    kubedl = [c for c in of_type(doc, CRD) if c["parent"].startswith("trainstack:platform:KubeDL")]
    assert len(kubedl) == 5 and named(doc, "kubedl-role")
    assert any("KubeDL's controller is not deployed" in step for step in doc["pending"])


def test_the_controller_runs_the_pinned_image(ack: dict[str, Any]) -> None:
    controller = named(ack, "kubedl-controller")["inputs"]
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    assert container["image"].endswith("/platform/kubedl@sha256:" + "ab" * 32)


def test_the_cluster_autoscaler_is_configured(ack: dict[str, Any]) -> None:
    autoscaler = named(ack, "autoscaler")
    assert autoscaler["type"] == "alicloud:cs/autoscalingConfig:AutoscalingConfig"
    assert autoscaler["inputs"]["scalerType"] == "cluster-autoscaler"
    assert autoscaler["inputs"]["scaleDownEnabled"] is True


def test_every_node_pool_logs_in_with_the_platform_key(ack: dict[str, Any]) -> None:
    key = named(ack, "node-key-pair")["inputs"]
    assert key["publicKey"].startswith("ssh-rsa ")
    pools = of_type(ack, POOL)
    assert len(pools) == 5
    assert all(
        p["inputs"]["keyName"] == "(known after apply)"
        or p["inputs"]["keyName"] == key["keyPairName"]
        for p in pools
    )
    assert all(
        "alicloud:ecs/ecsKeyPair:EcsKeyPair::node-key-pair" in p["options"]["dependsOn"]
        for p in pools
    )


# --- would deploy but not work -----------------------------------------------------------------


def test_system_pool_is_fixed_size_and_kept_for_add_ons(ack: dict[str, Any]) -> None:
    system = named(ack, "pool-system")["inputs"]
    assert system["desiredSize"] == "2"
    assert "scalingConfig" not in system, "an autoscaled node carries k8s.aliyun.com=true"
    # Tainted, so training pods cannot land there and starve CoreDNS and the CSI plugins.
    assert system["taints"] == [
        {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
    ]
    others = [p["inputs"] for p in of_type(ack, POOL) if p["name"] != "pool-system"]
    assert all(p["scalingConfig"]["enable"] is True for p in others)


def test_a_cpu_spot_pool_is_tainted_and_labelled_as_cpu(
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    ack: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu_spot = named(ack, "pool-spot")["inputs"]
    assert {t["key"] for t in gpu_spot["taints"]} == {"nvidia.com/gpu", "trainstack.dev/capacity"}
    monkeypatch.chdir(
        ready_project(
            tmp_path / "cpu",
            kubedl_root,
            ready,
            "ack-dev",
            **{"trainstack:spotPool": {"instanceTypes": ["ecs.g7.2xlarge"], "maxSize": 4}},
        )
    )
    spot = named(plan("--env", "ack-dev"), "pool-spot")
    assert spot["inputs"]["taints"] == [
        {"key": "trainstack.dev/capacity", "value": "spot", "effect": "NoSchedule"}
    ]
    assert labels(spot)["trainstack.dev/accelerator"] == "cpu"
    assert spot["inputs"]["scalingConfig"]["type"] == "spot"


def test_kubedl_cluster_role_reads_priority_classes(in_repo: None) -> None:
    for env in ("ack-dev", "local"):
        role = named(plan("--env", env), "kubedl-role")["inputs"]
        rules = [r for r in role["rules"] if "priorityclasses" in r["resources"]]
        assert rules and rules[0]["apiGroups"] == ["scheduling.k8s.io"]
        assert {"get", "list", "watch"} <= set(rules[0]["verbs"])
        # Gang schedulers' groups as KubeDL v0.5.0's role.yaml grants them: every verb.
        gang = {g for r in role["rules"] if r["verbs"] == ["*"] for g in r["apiGroups"]}
        assert {
            "scheduling.incubator.k8s.io",
            "scheduling.sigs.dev",
            "scheduling.volcano.sh",
            "scheduling.sigs.k8s.io",
        } <= gang


def test_jobs_role_trust_is_scoped_to_the_oss_csi_service_account(in_repo: None) -> None:
    role = named(plan("--env", "ack-dev"), "jobs-role")["inputs"]
    trust = json.loads(role["assumeRolePolicyDocument"])
    (statement,) = trust["Statement"]
    assert (
        statement["Condition"]["StringEquals"]["oidc:sub"]
        == "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"
    )


def test_kubeconfig_mode_oss_endpoint_is_configured(
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.spec import load_run

    key = {"secure": CIPHERTEXT}
    monkeypatch.chdir(
        ready_project(
            tmp_path / "p",
            kubedl_root,
            ready,
            "local",
            **{
                "trainstack:ossAccessKeys": {"vision": {"id": key, "secret": key}},
                "trainstack:ossEndpoint": "oss-cn-beijing.aliyuncs.com",
            },
        )
    )
    doc = plan("--env", "local")
    assert doc["outputs"]["ossEndpoint"] == "oss-cn-beijing.aliyuncs.com"
    run = load_run(REPO / "components/mnist-ddp/runs/baseline.yaml")
    options = render_options(doc["outputs"], run, "local")
    assert options.oss_endpoint == "oss-cn-beijing.aliyuncs.com"
    # An AccessKey without an endpoint is one clear error, never Hangzhou's internal endpoint.
    monkeypatch.chdir(
        ready_project(
            tmp_path / "q",
            kubedl_root,
            ready,
            "local",
            **{"trainstack:ossAccessKeys": {"vision": {"id": key, "secret": key}}},
        )
    )
    done = Cli().invoke("plan", "--env", "local")
    assert done.code != 0
    assert "trainstack:ossEndpoint: expected an OSS endpoint" in done.err


# --- nothing stateful was protected ------------------------------------------------------------

STATEFUL = {
    "alicloud:nas/fileSystem:FileSystem",
    "alicloud:oss/bucket:Bucket",
    "alicloud:cr/registryEnterpriseInstance:RegistryEnterpriseInstance",
    "alicloud:cs/registryEnterpriseNamespace:RegistryEnterpriseNamespace",
    "alicloud:cs/registryEnterpriseRepo:RegistryEnterpriseRepo",
    CRD,
}


def test_nas_buckets_registry_crds_and_team_namespaces_are_protected(in_repo: None) -> None:
    doc = plan("--env", "ack-dev")
    protected = {
        (r["type"], r["name"])
        for r in doc["resources"]
        if r["options"]["protect"] and r["options"]["retainOnDelete"]
    }
    for type_ in STATEFUL:
        members = {(r["type"], r["name"]) for r in of_type(doc, type_)}
        assert members and members <= protected, type_
    assert ("kubernetes:core/v1:Namespace", "ns-vision") in protected
    assert ("kubernetes:core/v1:Namespace", "ns-nlp") in protected
    assert ("kubernetes:core/v1:Namespace", "kubedl-namespace") not in protected
    assert len(of_type(doc, "alicloud:oss/bucket:Bucket")) == 5


def test_protection_is_one_transformation_not_scattered_flags(
    local: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.infra.platform.protection import STATEFUL_TYPES

    monkeypatch.chdir(REPO)
    for doc in (plan("--env", "ack-dev"), local):
        for r in doc["resources"]:
            team_ns = r["type"] == "kubernetes:core/v1:Namespace" and "trainstack.dev/team" in r[
                "inputs"
            ]["metadata"].get("labels", {})
            expected = r["type"] in STATEFUL_TYPES or team_ns
            assert r["options"]["protect"] is expected, r["name"]
            assert r["options"]["retainOnDelete"] is expected, r["name"]
    assert any(
        r["type"] == "kubernetes:core/v1:PersistentVolumeClaim" and r["options"]["protect"]
        for r in local["resources"]
    ), "the artifact claims hold run outputs"
    sources = (REPO / "trainstack/infra/platform").glob("*.py")
    flagged = [
        p.name for p in sources if re.search(r"\b(protect|retain_on_delete)\s*=", p.read_text())
    ]
    assert flagged == ["protection.py"]


def test_nas_is_zoned_and_encrypted_and_buckets_are_encrypted_private_with_lifecycle(
    in_repo: None,
) -> None:
    doc = plan("--env", "ack-dev")
    nas = named(doc, "nas")["inputs"]
    assert (nas["zoneId"], nas["encryptType"]) == ("cn-hangzhou-h", 1)
    for bucket in of_type(doc, "alicloud:oss/bucket:Bucket"):
        inputs = bucket["inputs"]
        assert inputs["serverSideEncryptionRule"] == {"sseAlgorithm": "AES256"}
        rule = inputs["lifecycleRules"][0]
        assert rule["enabled"] is True and rule["abortMultipartUploads"] == [{"days": 7}]
        block = named(doc, f"{bucket['name']}-public-access-block")["inputs"]
        assert block["blockPublicAccess"] is True
    models = named(doc, "bucket-models")["inputs"]
    assert models["lifecycleRules"][0]["noncurrentVersionExpirations"] == [{"days": 30}]


def test_the_jobs_policy_rotates_its_versions(in_repo: None) -> None:
    policy = named(plan("--env", "ack-dev"), "jobs-oss-policy")["inputs"]
    assert policy["rotateStrategy"] == "DeleteOldestNonDefaultVersionWhenLimitExceeded"


def test_every_team_namespace_gives_containers_default_requests(in_repo: None) -> None:
    for env in ("ack-dev", "local"):
        doc = plan("--env", env)
        for team in ("vision", "nlp"):
            limits = named(doc, f"limits-{team}")["inputs"]
            assert limits["metadata"]["namespace"] == team
            (item,) = limits["spec"]["limits"]
            assert item["type"] == "Container"
            assert set(item["defaultRequest"]) == {"cpu", "memory", "ephemeral-storage"}


def test_each_team_is_capped_at_its_priority(in_repo: None) -> None:
    doc = plan("--env", "ack-dev")
    assert doc["outputs"]["teamMaxPriority"] == {"vision": 7, "nlp": 5}
    for team, allowed in (("vision", 7), ("nlp", 5)):
        cap = named(doc, f"priority-cap-{team}")["inputs"]
        assert cap["spec"]["hard"] == {"pods": "0"}
        (expr,) = cap["spec"]["scopeSelector"]["matchExpressions"]
        assert (expr["scopeName"], expr["operator"]) == ("PriorityClass", "In")
        assert expr["values"] == [
            *(f"trainstack-priority-{p}" for p in range(allowed + 1, 10)),
            "system-node-critical",
            "system-cluster-critical",
        ]


def test_a_run_above_its_teams_cap_is_refused_before_deploy() -> None:
    from trainstack.errors import ConfigError
    from trainstack.infra.run.options import render_options
    from trainstack.spec import load_run

    run = load_run(REPO / "components/mnist-ddp/runs/baseline.yaml")  # team vision, priority 5
    outputs = {
        "mode": "kubeconfig",
        "namespaces": {"vision": "vision"},
        "teamMaxPriority": {"vision": 5},
        "ossAuth": {"type": "none"},
    }
    assert render_options(outputs, run, "local").namespace == "vision"
    with pytest.raises(ConfigError) as caught:
        render_options({**outputs, "teamMaxPriority": {"vision": 4}}, run, "local")
    assert "spec.priority: 5 is above the maxPriority of team 'vision', 4" in caught.value.message


# --- hard to operate ---------------------------------------------------------------------------

COMPONENTS = {
    "Network",
    "Cluster",
    "NodePools",
    "Storage",
    "Registry",
    "KubeDL",
    "Kueue",
    "Tenancy",
    "TeamAccess",
    "PodGuards",
}


def test_resources_are_grouped_in_components(in_repo: None) -> None:
    doc = plan("--env", "ack-dev")
    top = [r for r in doc["resources"] if r["parent"] is None]
    assert {r["type"] for r in top if not r["type"].startswith("pulumi:providers:")} == {
        f"trainstack:platform:{c}" for c in COMPONENTS
    }
    assert {r["type"] for r in top if r["type"].startswith("pulumi:providers:")} == {
        "pulumi:providers:alicloud",
        "pulumi:providers:kubernetes",
    }
    assert all(
        r["parent"] and r["parent"].startswith("trainstack:platform:")
        for r in doc["resources"]
        if r not in top
    )


def test_pulumi_yaml_declares_config_with_types_and_descriptions() -> None:
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    declared = project["config"]
    assert declared and all(d.get("type") and d.get("description") for d in declared.values())
    text = (REPO / "Pulumi.yaml").read_text()
    from trainstack.infra.platform.config import _KUBECONFIG_ONLY, OSS_ACCESS_KEY_KEYS
    from trainstack.infra.platform.config_ack import ACK_KEYS

    for key in (
        *ACK_KEYS,
        *_KUBECONFIG_ONLY,
        *OSS_ACCESS_KEY_KEYS,
        "teams",
        "registryPassword",
        "registryServer",
        "crdSource",
        "image",
    ):
        assert re.search(rf"\b{key}\b", text), f"{key} is neither declared nor described"


def test_a_stack_without_a_declared_key_is_refused_as_pulumi_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = (
        (REPO / "Pulumi.local.yaml")
        .read_text()
        .replace("  trainstack:registryUsername: trainstack\n", "")
    )
    (tmp_path / "Pulumi.local.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    done = Cli().invoke("plan", "--env", "local")
    assert done.code != 0
    assert "trainstack:registryUsername: missing; Pulumi.yaml declares it" in done.err


def test_pulumi_install_installs_trainstack() -> None:
    lines = [
        line.strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines == ["-e ."]
    assert (
        yaml.safe_load((REPO / "Pulumi.yaml").read_text())["runtime"]["options"]["toolchain"]
        == "pip"
    )


def test_no_placeholder_ciphertext_and_a_first_run_gets_the_programs_message(in_repo: None) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    for env in ("local", "ack-dev"):
        assert "secure:" not in (REPO / f"Pulumi.{env}.yaml").read_text()
        doc = plan("--env", env)
        assert any("trainstack:registryPassword is not set" in s for s in doc["pending"])
    cfg = read_env(find_project(REPO), "local")
    with pytest.raises(ConfigError) as caught:
        load(cfg.values, stack="local", source="Pulumi.local.yaml", root=REPO)
    assert (
        "trainstack:registryPassword: expected a secret, but it is missing" in caught.value.message
    )
    assert "pulumi config set --secret trainstack:registryPassword" in (caught.value.hint or "")


def test_cluster_name_is_a_known_key(kubedl_root: Path, ready: dict[str, dict[str, str]]) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "local")
    values = {**cfg.values, **ready["local"], "trainstack:clusterName": "mine"}
    with pytest.raises(ConfigError) as caught:
        load(
            values,
            stack="local",
            source="Pulumi.local.yaml",
            root=kubedl_root,
            secret_keys=frozenset({"trainstack:registryPassword"}),
        )
    assert caught.value.message == (
        "Pulumi.local.yaml: trainstack:clusterName: only used when trainstack:mode is ack"
    )
    ack = read_env(find_project(REPO), "ack-dev")
    loaded = load(
        {**ack.values, **ready["ack-dev"], "trainstack:clusterName": "mine"},
        stack="ack-dev",
        source="Pulumi.ack-dev.yaml",
        root=kubedl_root,
        secret_keys=frozenset({"trainstack:registryPassword"}),
    )
    assert loaded.ack is not None and loaded.ack.cluster_name == "mine"


# --- the plan shows options; the artifact store --------------------------------------------------


def test_plan_json_shows_each_resources_options(ack: dict[str, Any]) -> None:
    for r in ack["resources"]:
        assert set(r["options"]) == {
            "protect",
            "retainOnDelete",
            "parent",
            "dependsOn",
            "deleteBeforeReplace",
            "replaceOnChanges",
        }
        assert r["options"]["parent"] == r["parent"]
    nas = named(ack, "nas")["options"]
    assert nas == {
        "protect": True,
        "retainOnDelete": True,
        "parent": "trainstack:platform:Storage::storage",
        "dependsOn": [],
        "deleteBeforeReplace": False,
        "replaceOnChanges": [],
    }
    controller = named(ack, "kubedl-controller")["options"]
    assert (
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::crd-tfjob"
        in controller["dependsOn"]
    )
    # its image is pulled with the credential helper's tokens: the helper comes first
    assert (
        "alicloud:cs/kubernetesAddon:KubernetesAddon::acr-credential-helper"
        in controller["dependsOn"]
    )


def test_the_artifact_store_is_exported(ack: dict[str, Any], local: dict[str, Any]) -> None:
    assert ack["outputs"]["artifactStore"] == "oss://acme-trainstack-dev-artifacts/"
    assert local["outputs"]["artifactStore"] == "pvc://trainstack-artifacts/"
    claims = of_type(local, "kubernetes:core/v1:PersistentVolumeClaim")
    assert sorted(c["inputs"]["metadata"]["namespace"] for c in claims) == ["nlp", "vision"]
    assert all(c["inputs"]["metadata"]["name"] == "trainstack-artifacts" for c in claims)


def test_an_existing_artifact_claim_is_used_not_created(
    tmp_path: Path,
    kubedl_root: Path,
    ready: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(
        ready_project(
            tmp_path / "p", kubedl_root, ready, "local", **{"trainstack:artifactClaim": "team-nas"}
        )
    )
    doc = plan("--env", "local")
    assert doc["outputs"]["artifactStore"] == "pvc://team-nas/"
    assert not of_type(doc, "kubernetes:core/v1:PersistentVolumeClaim")


@pytest.mark.parametrize(
    ("key", "needle"),
    [
        ("trainstack:deployer", "pulumi config set --path 'trainstack:deployer.uid'"),
        ("trainstack:apiAllowedCidrs", "pulumi config set --path 'trainstack:apiAllowedCidrs[0]'"),
        ("trainstack:nodePublicKey", "pulumi config set trainstack:nodePublicKey"),
        ("trainstack:registryPassword", "pulumi config set --secret trainstack:registryPassword"),
    ],
)
def test_each_set_up_step_is_refused_by_pulumi_up_and_listed_by_the_plan(
    key: str, needle: str, kubedl_root: Path, ready: dict[str, dict[str, str]]
) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "ack-dev")
    values = {**cfg.values, **ready["ack-dev"]}
    del values[key]
    secret = frozenset({"trainstack:registryPassword"})
    with pytest.raises(ConfigError) as caught:
        load(
            values,
            stack="ack-dev",
            source="Pulumi.ack-dev.yaml",
            root=kubedl_root,
            secret_keys=secret,
        )
    assert key in caught.value.message and needle in (caught.value.hint or "")
    planned = load(
        values,
        stack="ack-dev",
        source="Pulumi.ack-dev.yaml",
        root=kubedl_root,
        secret_keys=secret,
        offline=True,
    )
    assert [step for step in planned.pending if key in step and needle in step]
