"""A Kueue environment's platform (docs/queues.md): Kueue installed from a locked CRD folder, a
ResourceFlavor per node pool, per team a ClusterQueue in one cohort and a LocalQueue; KubeDL
without DAG scheduling; the ResourceQuota at Kueue's ceiling. Facts from Kueue v0.19.2 are cited
in trainstack/kueue/ and trainstack/infra/platform/kueue_release.py."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.infra.admission import policies_named
from tests.infra.conftest import RecordingMocks, fake_crd
from tests.trainer.environments import TRAINER_ENV, trainer_project
from trainstack.infra.platform import kueue_releaser, queues
from trainstack.infra.platform.kubedl_source import mirror
from trainstack.infra.platform.kueue_release import KUEUE_RELEASE
from trainstack.kueue import api
from trainstack.kueue.podgroup import KUBEDL_DAG_GATE_OFF

CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LQ = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
RF = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
QUOTA = "kubernetes:core/v1:ResourceQuota"
MUTATING = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"
VALIDATING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"

# The v1beta2 fields trainstack writes, and no others (Kueue v0.19.2
# apis/kueue/v1beta2/clusterqueue_types.go:67-150, 255-345, 495-560; resourceflavor_types.go:
# 60-104; localqueue_types.go:33-37; fairsharing_types.go:25-39).
CQ_SPEC = {
    "cohortName",
    "namespaceSelector",
    "queueingStrategy",
    "resourceGroups",
    "fairSharing",
    "preemption",
}
QUOTA_FIELDS = {"name", "nominalQuota", "borrowingLimit", "lendingLimit"}


def _by_name(mocks: RecordingMocks, typ: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in mocks.of_type(typ)}


def _nominal(cq: dict[str, Any]) -> dict[str, dict[str, dict[str, str]]]:
    (group,) = cq["spec"]["resourceGroups"]
    return {
        f["name"]: {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in f["resources"]}
        for f in group["flavors"]
    }


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_the_platform_installs_kueue_and_a_queue_per_team(mocks: RecordingMocks, env: str) -> None:
    values = mocks.use_env(env)
    outputs = mocks.build()
    crds = {r.inputs["metadata"]["name"] for r in mocks.of_type(CRD)}
    assert {f"{p}.{api.GROUP}" for p in ("clusterqueues", "localqueues", "workloads")} <= crds
    assert len([c for c in crds if c.endswith(api.GROUP)]) == len(KUEUE_RELEASE.crds)
    teams = [t["name"] for t in json.loads(values["trainstack:teams"])]
    cqs = _by_name(mocks, CQ)
    assert sorted(cqs) == sorted(teams)
    lqs = [r.inputs for r in mocks.of_type(LQ)]
    assert sorted(q["metadata"]["namespace"] for q in lqs) == sorted(teams)
    assert {q["spec"]["clusterQueue"] for q in lqs} == set(teams)
    assert {q["metadata"]["name"] for q in lqs} == {queues.LOCAL_QUEUE}
    for cq in cqs.values():
        assert set(cq["spec"]) == CQ_SPEC
        assert cq["spec"]["cohortName"] == "trainstack"
        assert cq["spec"]["preemption"] == {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
        }
        for flavor in cq["spec"]["resourceGroups"][0]["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == list(queues.RESOURCES)
            assert all(set(r) <= QUOTA_FIELDS for r in flavor["resources"])
    flavors = _by_name(mocks, RF)
    model = queues.QueueModel.from_output(outputs["kueueQueues"])
    assert model is not None and sorted(flavors) == sorted(f.name for f in model.flavors)
    if env == "local":
        assert flavors == {"all-nodes": {**flavors["all-nodes"], "spec": {}}}
        (controller,) = [
            d for d in mocks.of_type(DEPLOYMENT) if d.inputs["metadata"]["name"] == KUEUE_DEPLOY
        ]
        (container,) = controller.inputs["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.k8s.io/kueue/kueue:v0.19.2"
    else:
        # one flavor per pool a training pod may land on, never the system pool
        assert sorted(flavors) == ["a10", "cpu", "spot", "v100"]
        assert flavors["spot"]["spec"]["nodeTaints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": "trainstack.dev/capacity", "value": "spot", "effect": "NoSchedule"},
        ]
        assert flavors["a10"]["spec"]["nodeLabels"]["trainstack.dev/pool"] == "a10"


KUEUE_DEPLOY = "kueue-controller-manager"


def test_each_teams_flavors_add_up_to_exactly_its_quota(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    mocks.build()
    cqs = _by_name(mocks, CQ)
    from trainstack.spec.values import quantity

    expected = {"vision": (128, 512 * 1024**3, 8), "nlp": (64, 256 * 1024**3, 4)}
    for team, (cpu, memory, gpus) in expected.items():
        per = _nominal(cqs[team])
        assert sum(quantity(f["cpu"]["nominalQuota"]).value for f in per.values()) == cpu
        assert sum(quantity(f["memory"]["nominalQuota"]).value for f in per.values()) == memory
        assert sum(int(f[queues.GPU]["nominalQuota"]) for f in per.values()) == gpus
        assert per["cpu"][queues.GPU]["nominalQuota"] == "0"  # no GPU on the CPU pool
    # vision's 8 GPUs fill the pools in order: a10 (4 nodes of 1), v100 (2), the spot pool
    vision = _nominal(cqs["vision"])
    assert [vision[f][queues.GPU]["nominalQuota"] for f in ("a10", "v100", "spot")] == [
        "4",
        "2",
        "2",
    ]
    # ack-dev: borrow up to the team's whole quota again in any pool, lend half of each share
    assert vision["a10"][queues.GPU]["borrowingLimit"] == "8"
    assert vision["a10"][queues.GPU]["lendingLimit"] == "2"
    assert cqs["vision"]["spec"]["fairSharing"] == {"weight": "2"}
    assert cqs["nlp"]["spec"]["fairSharing"] == {"weight": "1"}


def test_the_resource_quota_is_kueues_ceiling_for_the_team(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    outputs = mocks.build()
    model = queues.QueueModel.from_output(outputs["kueueQueues"])
    assert model is not None
    hard = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"]
        for r in mocks.of_type(QUOTA)
        if r.inputs["metadata"]["name"] == "trainstack-quota"
    }
    for team in ("vision", "nlp"):
        for res in queues.RESOURCES:
            assert hard[team][f"requests.{res}"] == queues.show(res, model.ceiling(team, res))
    # nlp: its own 4 GPUs on a10 plus what vision lends of its a10, v100 and spot shares
    assert hard["nlp"]["requests.nvidia.com/gpu"] == "8"
    assert model.maximum("nlp", "a10", queues.GPU) == 4 + 2


def test_a_change_of_a_teams_quota_changes_its_cluster_queue(mocks: RecordingMocks) -> None:
    teams = '[{"name": "vision", "quota": {"cpu": "24", "memory": "64Gi", "gpu": 0}}]'
    mocks.use_env("local", **{"trainstack:teams": teams, "kueue:teams": "{}"})
    mocks.build()
    (cq,) = mocks.of_type(CQ)
    assert _nominal(cq.inputs)["all-nodes"]["cpu"] == {"nominalQuota": "24"}


def test_kubedl_runs_without_dag_scheduling_only_where_kueue_queues(
    mocks: RecordingMocks, tmp_path: Path
) -> None:
    mocks.use_env("local")
    mocks.build()
    (controller,) = [d for d in mocks.of_type(DEPLOYMENT) if d.name == "kubedl-controller"]
    (container,) = controller.inputs["spec"]["template"]["spec"]["containers"]
    assert KUBEDL_DAG_GATE_OFF in container["args"]


def test_without_kueue_keys_nothing_is_queued(mocks: RecordingMocks) -> None:
    from trainstack.envfile import find_project, read_env
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(Path.cwd()), "local")
    values = {k: v for k, v in cfg.values.items() if not k.startswith("kueue:")}
    loaded = load(values, stack="local", source="Pulumi.local.yaml", offline=True)
    assert loaded.kueue is None and loaded.kubedl.dag_scheduling


def test_webhooks_reach_only_queued_objects_and_the_config_names_the_integrations(
    mocks: RecordingMocks,
) -> None:
    mocks.use_env("local")
    mocks.build()
    (mutating,) = [r.inputs for r in mocks.of_type(MUTATING) if "kueue" in r.name]
    hooks = {h["name"]: h for h in mutating["webhooks"]}
    for name in ("mpod.kb.io", "mjob.kb.io"):
        assert hooks[name]["objectSelector"] == {
            "matchExpressions": [{"key": api.QUEUE_LABEL, "operator": "Exists"}]
        }
    assert "mjobset.kb.io" not in hooks  # a KubeDL environment has no JobSets
    config = next(
        r.inputs
        for r in mocks.of_type(CONFIGMAP)
        if r.inputs["metadata"]["name"].startswith("kueue")
    )
    text = config["data"]["controller_manager_config.yaml"]
    assert '- "batch/job"' in text and '- "pod"' in text and "jobset" not in text
    assert "manageJobsWithoutQueueName: false" in text
    assert f"{api.UNADMITTED_GATE}: true" in text and "fairSharing:" in text


def test_a_trainer_environment_queues_jobsets_and_trainjobs_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer_project(tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    done = Cli().invoke("plan", "--env", TRAINER_ENV, "--json")
    assert done.code == 0, done.output
    resources = json.loads(done.out)["resources"]
    config = next(
        r["inputs"]
        for r in resources
        if r["type"] == CONFIGMAP and r["inputs"]["metadata"]["name"] == "kueue-manager-config"
    )
    text = config["data"]["controller_manager_config.yaml"]
    assert '- "jobset.x-k8s.io/jobset"' in text and '- "trainer.kubeflow.org/trainjob"' in text
    (mutating,) = [r for r in resources if r["type"] == MUTATING and "kueue" in r["name"]]
    names = {h["name"] for h in mutating["inputs"]["webhooks"]}
    assert {"mjobset.kb.io", "mtrainjob.kb.io"} <= names


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("kueue:borrowingLimit", "lots", "kueue:borrowingLimit: expected a percentage"),
        ("kueue:lendingLimit", "150%", "kueue:lendingLimit: expected a percentage"),
        ("kueue:teams", '{"robotics": {"weight": 2}}', "kueue:teams.robotics: expected a team"),
        ("kueue:teams", '{"vision": {"weihgt": 2}}', "weihgt"),
        ("kueue:cohort", "Not_A_Label", "kueue:cohort: expected a DNS label"),
    ],
)
def test_bad_kueue_config_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, value: str, message: str
) -> None:
    trainer_project(tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    path = tmp_path / "p" / "Pulumi.local.yaml"
    path.write_text(path.read_text() + f"  {key}: '{value}'\n")
    done = Cli().invoke("plan", "--env", "local")
    assert done.code != 0
    assert message in done.err and "Traceback" not in done.output


def test_the_shipped_lock_names_every_crd_of_the_release() -> None:
    lock = json.loads(
        (Path(__file__).parents[2] / "platform/kueue/v0.19.2/kueue.lock.json").read_text()
    )
    assert lock["version"] == "v0.19.2"
    assert lock["releasePath"] == KUEUE_RELEASE.release_path
    assert {k: v["file"] for k, v in lock["crds"].items()} == dict(KUEUE_RELEASE.crds)
    assert all(len(v["sha256"]) == 64 for v in lock["crds"].values())


def test_mirror_release_kueue_writes_and_checks_the_lock(tmp_path: Path) -> None:
    source = tmp_path / "release" / KUEUE_RELEASE.release_path
    source.mkdir(parents=True)
    for kind, file in KUEUE_RELEASE.crds.items():
        (source / file).write_text(fake_crd(kind, file))
    folder = tmp_path / KUEUE_RELEASE.folder("v0.19.2")
    written = mirror(
        str(tmp_path / "release"), folder, write_lock_version="v0.19.2", release=KUEUE_RELEASE
    )
    assert sorted(p.name for p in written) == sorted(KUEUE_RELEASE.crds.values())
    (folder / "kueue.x-k8s.io_workloads.yaml").write_text("tampered: true\n")
    done = Cli().invoke(
        "kubedl",
        "mirror",
        "--release",
        "kueue",
        "--from",
        str(tmp_path / "release"),
        "--to",
        str(folder),
    )
    assert done.code == 0, done.output  # the file is written again from the release
    assert (folder / "kueue.x-k8s.io_workloads.yaml").read_text() != "tampered: true\n"


RELEASER_DIGEST_IMAGE = (
    "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com/acme/python@sha256:" + "3" * 64
)


def _releaser(mocks: RecordingMocks) -> dict[str, Any] | None:
    found = [
        d.inputs
        for d in mocks.of_type(DEPLOYMENT)
        if d.inputs["metadata"]["name"] == kueue_releaser.NAME
    ]
    return found[0] if found else None


def test_a_kueue_environment_runs_the_finalizer_releaser_under_its_guard(
    mocks: RecordingMocks,
) -> None:
    mocks.use_env("local")
    outputs = mocks.build()
    releaser = _releaser(mocks)
    assert releaser is not None and releaser["metadata"]["namespace"] == "kueue-system"
    pod = releaser["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "docker.io/library/python:3.13-alpine"
    script = f"{kueue_releaser.MOUNT}/{kueue_releaser.SCRIPT}"
    assert container["command"] == ["python3", "-u", script, *kueue_releaser.arguments()]
    assert "--owner-group=training.kubedl.io" in container["command"]
    assert "--owner-group=inference.kubedl.io" in container["command"]  # ElasticBatchJob's
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    # the ConfigMap carries the source as it is in the package, and its hash rolls the pod
    (source,) = [
        c.inputs
        for c in mocks.of_type(CONFIGMAP)
        if c.inputs["metadata"]["name"] == "trainstack-kueue-releaser"
    ]
    text = kueue_releaser.SOURCE.read_text()
    assert source["data"] == {kueue_releaser.SCRIPT: text}
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert releaser["spec"]["template"]["metadata"]["annotations"] == {
        "trainstack.io/source-sha256": digest
    }
    # its account reads and patches pods, nothing else; the guard binds every update it makes
    (role,) = [
        r.inputs
        for r in mocks.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.inputs["metadata"]["name"] == kueue_releaser.NAME
    ]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]}
    ]
    (policy,) = policies_named(mocks.of_type(POLICY), kueue_releaser.POLICY_NAME).values()
    assert policy == kueue_releaser.policy_spec("kueue-system")
    (binding,) = policies_named(mocks.of_type(POLICY_BINDING), kueue_releaser.POLICY_NAME).values()
    assert binding == {"policyName": kueue_releaser.POLICY_NAME, "validationActions": ["Deny"]}
    assert queues.QueueModel.from_output(outputs["kueueQueues"]).releaser is True  # type: ignore[union-attr]


def test_on_ack_the_releaser_waits_for_a_pinned_image(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev")
    outputs = mocks.build()
    assert _releaser(mocks) is None
    assert queues.QueueModel.from_output(outputs["kueueQueues"]).releaser is False  # type: ignore[union-attr]


def test_on_ack_a_pinned_image_runs_the_releaser(mocks: RecordingMocks) -> None:
    mocks.use_env("ack-dev", **{"kueue:releaserImage": RELEASER_DIGEST_IMAGE})
    mocks.build()
    releaser = _releaser(mocks)
    assert releaser is not None
    (container,) = releaser["spec"]["template"]["spec"]["containers"]
    assert container["image"] == RELEASER_DIGEST_IMAGE


def test_an_offline_ack_plan_says_how_to_set_the_releasers_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])
    done = Cli().invoke("plan", "--env", "ack-dev")
    assert done.code == 0, done.output
    assert "kueue:releaserImage is not set" in done.output
    assert "pulumi config set kueue:releaserImage" in done.output


def test_a_pool_promised_beyond_what_it_holds_is_warned_about(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """ack-dev's teams are each poured into the a10 pool first: 4 + 4 GPUs promised where the
    pool holds 4 at its maxSize; the kubeconfig cluster's one flavor has no known size. (The
    program's warnings reach the root logger, which `plan` prints.)"""
    monkeypatch.chdir(Path(__file__).parents[2])
    monkeypatch.setenv("TRAINSTACK_PLAN_CACHE", "off")
    with caplog.at_level(logging.WARNING):
        done = Cli().invoke("plan", "--env", "ack-dev")
    assert done.code == 0, done.output
    warned = [r.getMessage() for r in caplog.records]
    (a10,) = [w for w in warned if "node pool a10 at its maxSize" in w]
    assert "nvidia.com/gpu 4 held, 8 promised" in a10
    assert "raise the pool's maxSize or lower the quotas" in a10
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        local = Cli().invoke("plan", "--env", "local")
    assert local.code == 0
    assert not [r for r in caplog.records if "promised" in r.getMessage()]
