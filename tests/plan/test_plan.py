"""``trainstack plan --env ENV``: the platform program run offline, every resource listed."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.infra.conftest import OSS_TEAM_KEYS, oss_key_of, team_oss_keys
from trainstack.infra.platform.teamaccess import TOKEN_TYPE

REPO = Path(__file__).resolve().parents[2]


def plan_json(*args: str) -> dict[str, Any]:
    result = Cli().invoke("plan", *args, "--json")
    assert result.code == 0, result.output
    return json.loads(result.out)  # type: ignore[no-any-return]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


# What `pulumi config set --secret --path 'trainstack:ossAccessKeys.<team>.<field>' ...` leaves
# in Pulumi.local.yaml: an object whose values are each a ciphertext.
OSS_CIPHERTEXT = {
    team: {
        "id": f"v1:T1NTSUQ=:{team}LWtleS1pZC1jaXBoZXJ0ZXh0",
        "secret": f"v1:T1NTU0VDUkVU:{team}LWtleS1zZWNyZXQtY2lwaGVydGV4dA==",
    }
    for team in ("vision", "nlp")
}


@pytest.fixture
def local_with_oss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The platform project with Pulumi.local.yaml plus an OSS AccessKey per team (secure)."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(REPO / "platform", tmp_path / "platform")
    text = (REPO / "Pulumi.local.yaml").read_text()
    text += "  trainstack:ossAccessKeys:\n"
    for team, fields in OSS_CIPHERTEXT.items():
        text += f"    {team}:\n"
        text += "".join(f"      {k}:\n        secure: {v}\n" for k, v in fields.items())
    text += "  trainstack:ossEndpoint: oss-cn-beijing.aliyuncs.com\n"
    (tmp_path / "Pulumi.local.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_plan_local_lists_every_resource_with_its_type(in_repo: None) -> None:
    doc = plan_json("--env", "local")
    assert doc["kind"] == "platform" and doc["stack"] == "local"
    types = {r["type"] for r in doc["resources"]}
    assert "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition" in types
    assert "kubernetes:scheduling.k8s.io/v1:PriorityClass" in types
    assert all(r["type"] and r["name"] for r in doc["resources"])
    assert doc["summary"] == {"create": len(doc["resources"])}
    assert not any(t.startswith("alicloud:") for t in types)


def test_plan_ack_dev_lists_cloud_and_cluster_resources(in_repo: None) -> None:
    doc = plan_json("--env", "ack-dev")
    types = [r["type"] for r in doc["resources"]]
    for expected in (
        "alicloud:vpc/network:Network",
        "alicloud:cs/managedKubernetes:ManagedKubernetes",
        "alicloud:nas/fileSystem:FileSystem",
        "alicloud:cs/registryEnterpriseNamespace:RegistryEnterpriseNamespace",
        "alicloud:ram/role:Role",
        "kubernetes:storage.k8s.io/v1:StorageClass",
    ):
        assert expected in types
    assert types.count("alicloud:cs/nodePool:NodePool") == 5
    assert types.count("alicloud:oss/bucket:Bucket") == 5
    pool = next(r for r in doc["resources"] if r["name"] == "pool-a10")
    # Ids only the cloud knows are shown as unknown, as in a real preview; numbers as ints.
    assert pool["inputs"]["clusterId"] == "(known after apply)"
    assert pool["inputs"]["scalingConfig"]["maxSize"] == 4
    assert pool["provider"] == "alicloud"


def test_plan_masks_secrets(in_repo: None) -> None:
    for env in ("local", "ack-dev"):
        doc = plan_json("--env", env)
        text = json.dumps(doc)
        assert "plan-secret-placeholder" not in text
        assert "cGxhY2Vob2xkZXI" not in text  # nor the ciphertext from the file
        secrets = [r for r in doc["resources"] if r["type"] == "kubernetes:core/v1:Secret"]
        # (Kueue's webhook certificate Secret is created empty: its controller fills it)
        filled = [
            r
            for r in secrets
            if r["inputs"].get("type") != TOKEN_TYPE and r["name"] != "kueue-webhook-cert"
        ]
        # ack-dev's pods pull the platform's ACR without a Secret; local's registry needs one
        assert bool(filled) is (env == "local")
        assert all(r["inputs"]["stringData"] == "[secret]" for r in filled)
        # the team token Secrets carry no input data (Kubernetes fills in the token)
        assert all(
            "data" not in r["inputs"] and "stringData" not in r["inputs"]
            for r in secrets
            if r not in filled
        )
        assert doc["outputs"]["kubeconfig"] == "[secret]"
        assert doc["outputs"]["teamKubeconfigs"] == "[secret]"


def test_plan_table_for_people(in_repo: None) -> None:
    result = Cli().invoke("plan", "--env", "local")
    assert result.code == 0, result.output
    assert "kubernetes:core/v1:ResourceQuota" in result.output
    assert "quota-vision" in result.output
    # 36, plus team access: a component, the PV ClusterRole, the admission namespace, 8 per team
    # (teamaccess.py: account, role, two bindings, token; volumepolicy.py: the PV guard's
    # policy, binding and parameters); the pod guards: a component, 2 per team (podguard.py:
    # policy and binding); a NetworkPolicy per team and the Service guard's policy and
    # binding (tenancy.py); Kueue: a component and its 29 resources (kueue.py), and the
    # finalizer releaser's 7: account, role, binding, guard policy and binding, source,
    # deployment (kueue_releaser.py)
    assert "101 to create" in result.output
    assert "plan-secret-placeholder" not in result.output


def test_unknown_env_is_a_clear_error(in_repo: None, capsys: pytest.CaptureFixture[str]) -> None:
    done = Cli().invoke("plan", "--env", "lcoal", "--json")
    assert done.code == 2
    err = done.err
    assert "no environment 'lcoal'" in err and "did you mean 'local'?" in err
    assert "Traceback" not in err


def test_config_error_is_reported_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = (
        (REPO / "Pulumi.ack-dev.yaml")
        .read_text()
        .replace("trainstack:region: cn-hangzhou", "trainstack:region: us-east-1")
    )
    (tmp_path / "Pulumi.bad.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    done = Cli().invoke("plan", "--env", "bad")
    assert done.code == 2
    err = done.err
    assert "Pulumi.bad.yaml: trainstack:region: expected one of" in err
    assert "Traceback" not in err


def test_plan_works_from_a_subfolder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "infra")
    assert plan_json("--env", "local")["project"] == "trainstack"


RUN_FILE = "components/mnist-ddp/runs/baseline.yaml"


def test_plan_run_lists_exactly_the_rendered_objects(local_with_oss: Path) -> None:
    from trainstack.render import RenderOptions, render_run
    from trainstack.spec import load_run

    doc = plan_json(str(REPO / RUN_FILE), "--env", "local")
    assert (doc["kind"], doc["project"], doc["stack"]) == (
        "run",
        "trainstack-runs",
        "local.vision.mnist-baseline-01",
    )
    from trainstack.infra.logplace import log_place
    from trainstack.infra.run.artifacts import place

    # Rendered for what Pulumi.local.yaml's platform provides: team vision's namespace, a local
    # cluster, the platform's pull secret, OSS AccessKey Secret and endpoint, and $METRICS
    # persisted in the platform's artifact claim under <team>/<run>/_metrics/, the replicas' logs
    # shipped beside them under <team>/<run>/logs/.
    store = "pvc://trainstack-artifacts/"
    expected = render_run(
        load_run(REPO / RUN_FILE),
        options=RenderOptions(
            namespace="vision",
            local_cluster=True,
            pull_secret="trainstack-registry",
            oss_secret="trainstack-oss",
            oss_endpoint="oss-cn-beijing.aliyuncs.com",
            metrics=place(store, "vision", "mnist-baseline-01", "_metrics"),
            logs=log_place(store, "vision", "mnist-baseline-01", keep=False),
            queue="trainstack",  # the platform queues (kueueQueues)
        ),
    )
    created = [r for r in doc["resources"] if r["type"].startswith("kubernetes:")]
    assert len(created) == len(expected)
    job = next(r for r in created if r["type"].endswith(":PyTorchJob"))
    from trainstack.infra.run.program import manifest_hash
    from trainstack.platformnames import SPEC_HASH_ANNOTATION

    rendered = next(m for m in expected if m["kind"] == "PyTorchJob")
    rendered["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = manifest_hash(expected)
    assert job["inputs"] == rendered
    assert job["provider"] == "k8s"
    provider = next(r for r in doc["resources"] if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"] == {"context": "kind-trainstack", "kubeconfig": "[secret]"}
    ref = next(r for r in doc["resources"] if r["type"] == "pulumi:pulumi:StackReference")
    assert (ref["op"], ref["inputs"]["name"]) == ("read", "organization/trainstack/local")
    assert doc["outputs"]["jobName"] == "mnist-baseline-01"
    assert doc["outputs"]["namespace"] == "vision"
    assert doc["outputs"]["kind"] == "PyTorchJob"


def test_plan_run_for_ack_uses_the_cloud_platform(in_repo: None) -> None:
    doc = plan_json(RUN_FILE, "--env", "ack-dev")
    volumes = [r for r in doc["resources"] if r["type"] == "kubernetes:core/v1:PersistentVolume"]
    # train, model, checkpoints, $METRICS and the replicas' logs in the platform's artifacts
    # bucket (the logs under the team's expiring prefix: infra/logplace.py)
    assert len(volumes) == 5
    paths = {v["inputs"]["spec"]["csi"]["volumeAttributes"]["path"] for v in volumes}
    assert "/vision/_logs/mnist-baseline-01" in paths
    for volume in volumes:
        csi = volume["inputs"]["spec"]["csi"]
        attributes = csi["volumeAttributes"]
        assert attributes["authType"] == "rrsa"
        assert attributes["roleName"] == "trainstack-ack-dev-jobs-vision"  # the run's team's role
        assert attributes["url"] == "oss-cn-hangzhou-internal.aliyuncs.com"
        assert "nodePublishSecretRef" not in csi
    assert "plan-secret-placeholder" not in json.dumps(doc)


def test_plan_run_then_platform_in_one_process(local_with_oss: Path) -> None:
    run_file = str(REPO / RUN_FILE)
    first = plan_json(run_file, "--env", "local")
    platform = plan_json("--env", "local")
    again = plan_json(run_file, "--env", "local")
    assert first == again
    assert platform["summary"] == {"create": 101 + 2}, "plus the OSS Secret of both teams"


def test_plan_with_an_oss_access_key_shows_only_secret_markers(local_with_oss: Path) -> None:
    doc = plan_json("--env", "local")
    secrets = {
        r["name"]: r["inputs"] for r in doc["resources"] if r["type"] == "kubernetes:core/v1:Secret"
    }
    assert {n for n in secrets if n.startswith("oss-secret-")} == {
        "oss-secret-vision",
        "oss-secret-nlp",
    }
    assert secrets["oss-secret-vision"]["stringData"] == "[secret]"
    assert secrets["oss-secret-nlp"]["stringData"] == "[secret]"
    assert doc["outputs"]["ossAuth"] == {
        "type": "secret",
        "secretName": "trainstack-oss",
        "teams": ["nlp", "vision"],
    }
    text = json.dumps(doc)
    assert "plan-secret-placeholder" not in text
    ciphertexts = [c for fields in OSS_CIPHERTEXT.values() for c in fields.values()]
    assert not any(c in text or c.split(":")[2] in text for c in ciphertexts)
    run = plan_json(str(REPO / RUN_FILE), "--env", "local")
    volume = next(r for r in run["resources"] if r["type"] == "kubernetes:core/v1:PersistentVolume")
    assert volume["inputs"]["spec"]["csi"]["nodePublishSecretRef"] == {
        "name": "trainstack-oss",
        "namespace": "vision",
    }


def test_the_access_key_values_never_reach_a_plan() -> None:
    """The plan engine given the real values (not the file's placeholders) masks them all."""
    from trainstack.envfile import find_project, read_env
    from trainstack.infra.platform.program import build, load_stack_config
    from trainstack.plan.engine import run_program

    oss = team_oss_keys("vision", "nlp")
    cfg = read_env(find_project(REPO), "local")
    plan = run_program(
        lambda: build(load_stack_config(offline=True, root=REPO)),
        project="trainstack",
        stack="local",
        config={**cfg.values, **oss},
        secret_keys=cfg.secret_keys | {OSS_TEAM_KEYS},
    )
    text = json.dumps([r.to_json() for r in plan.resources]) + json.dumps(plan.outputs)
    assert "oss-secret-vision" in text and "oss-secret-nlp" in text
    for team in ("vision", "nlp"):
        assert not any(value in text for value in oss_key_of(team).values())


def test_an_oss_run_on_a_platform_without_oss_says_what_to_set(
    in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    done = Cli().invoke("plan", RUN_FILE, "--env", "local", "--json")
    assert done.code == 2
    err = done.err
    assert "oss://acme-trainstack-dev-data/vision/mnist/ needs OSS credentials" in err
    assert "pulumi config set --secret --path 'trainstack:ossAccessKeys.vision.id'" in err
    assert "Traceback" not in err


def test_a_piped_plan_fits_100_columns_and_shows_binary_data_as_size_and_digest(
    in_repo: None,
) -> None:
    """Piped, the table was 200+ columns wide, and "key inputs" held the code
    tarball's base64 (binaryData.code.tar.gz=H4sI…)."""
    done = Cli()("plan", REPO / "components/mnist-ddp/runs/local.yaml", "--env", "local")
    assert done.returncode == 0, done.stderr
    # a pending step or note is one whole line, its command pasted from a pipe too; the policy
    # report after the plan is `policy check`'s own text
    plan = done.stdout.split("\npolicy: ", 1)[0].splitlines()
    wrapped = [x for x in plan if not x.startswith(("pending:", "note:"))]
    widest = max(len(line) for line in wrapped)
    assert widest <= 100, widest
    assert "H4sI" not in done.stdout
    found = re.search(
        r"binaryData\.code\.tar\.gz=<[0-9.]+ (KiB|B), sha256:[0-9a-f]{12}>", done.stdout
    )
    assert found, done.stdout


def test_plan_says_what_deploy_would_do_to_the_deployed_run(
    local_with_oss: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade of trainstack that renders a deployed run differently restarts it only with
    `deploy --upgrade`, and plan says so (from this user's index: plan stays offline)."""
    from trainstack.deploy.index import RunIndex, StackEntry
    from trainstack.plan.service import plan_run

    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    planned = plan_run(REPO / RUN_FILE, "local")
    assert planned.identity is not None
    deployed = StackEntry(
        run=str(planned.outputs["run"]),
        env="local",
        stack=planned.stack,
        project="trainstack-runs",
        backend="file://somewhere",
        component="mnist-ddp",
        version="0.0.0",
        experiment=None,
        spec_path=None,
        registry_id=None,
        spec_hash="0123456789abcdef",  # what an older trainstack rendered
        identity=planned.identity,
    )
    RunIndex(tmp_path / "home").put(deployed)
    result = Cli().invoke("plan", str(REPO / RUN_FILE), "--env", "local")
    assert result.code == 0, result.output
    assert f"deployed as stack {planned.stack}: the run is unchanged" in result.out
    assert "`deploy --upgrade` would restart it" in result.out
    changed = dataclasses.replace(deployed, identity="fedcba9876543210")
    RunIndex(tmp_path / "home").put(changed)
    result = Cli().invoke("plan", str(REPO / RUN_FILE), "--env", "local")
    assert "the run changed, so deploy replaces its job" in result.out
