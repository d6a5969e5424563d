"""PersistentVolumes are cluster-scoped, so every team's runner holds one cluster-wide right
(teamaccess.py). A ValidatingAdmissionPolicy per team narrows it (volumeguard.py): the runner may
manage only PVs named `<namespace>.…`, pre-bound to a claim of its namespace, whose source is its
team's own folder of the platform's storage. Without the guard, a team could mount the node's `/`
through a hostPath PV, another team's NAS folder or bucket prefix, or bind another team's PV.

The CEL is evaluated here with cel-python, a CEL implementation of the same specification the
API server follows, on admission requests shaped as Kubernetes sends them (`request`, `object`,
`oldObject`; `object` is null on DELETE).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import pytest

from tests.infra.admission import policies_named
from tests.infra.test_team_access import build
from trainstack.errors import ConfigError
from trainstack.infra.platform.teamaccess import guard_match
from trainstack.infra.platform.volumeguard import TeamVolumes, pv_problem, validations

REPO = Path(__file__).resolve().parents[2]
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
RUNNER = "system:serviceaccount:{}:trainstack-runner"


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_each_team_gets_a_pv_guard_bound_to_deny(mocks: Any, env: str) -> None:
    build(mocks, env)
    policies = policies_named(mocks.of_type(POLICY), "trainstack-team-volumes-")
    assert sorted(policies) == ["trainstack-team-volumes-nlp", "trainstack-team-volumes-vision"]
    for namespace in ("nlp", "vision"):
        spec = policies[f"trainstack-team-volumes-{namespace}"]
        assert spec["failurePolicy"] == "Fail"
        assert spec["matchConstraints"] == {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["persistentvolumes"],
                }
            ]
        }
        assert spec["matchConditions"] == [
            {"name": "team-runner", "expression": guard_match(namespace)}
        ]
        assert [v["expression"] for v in spec["validations"]] == [
            v["expression"] for v in validations(volumes(env, namespace))
        ]
    bindings = policies_named(mocks.of_type(POLICY_BINDING), "trainstack-team-volumes-")
    assert bindings == {
        name: {"policyName": name, "validationActions": ["Deny"]} for name in policies
    }


BUCKETS = ("acme-trainstack-dev-artifacts", "acme-trainstack-dev-data")
NAS = "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com"  # what the mocks give the mount target


def volumes(env: str, team: str) -> TeamVolumes:
    """What the shipped environments give team `team` (its namespace is its name)."""
    if env == "local":
        return TeamVolumes(team, team, None, None, None)
    buckets = tuple(
        sorted(
            f"acme-trainstack-dev-{p}"
            for p in ("data", "models", "checkpoints", "code", "artifacts")
        )
    )
    # the mocks' stack is "test": the cluster is trainstack-test, its team roles -jobs-<team>
    return TeamVolumes(team, team, buckets, (NAS,), f"trainstack-test-jobs-{team}")


ACK_NLP = TeamVolumes("nlp", "nlp", BUCKETS, (NAS,), "trainstack-ack-dev-jobs-nlp")
LOCAL_NLP = TeamVolumes("nlp", "nlp", None, None, None)


def oss(path: str, bucket: str = BUCKETS[1], role: str | None = ACK_NLP.oss_role) -> dict[str, Any]:
    attrs: dict[str, Any] = {"bucket": bucket, "path": path, "url": "oss-cn-hangzhou-internal"}
    if role:
        attrs |= {"authType": "rrsa", "roleName": role}
    return {
        "csi": {
            "driver": "ossplugin.csi.alibabacloud.com",
            "volumeHandle": "h",
            "volumeAttributes": attrs,
        }
    }


def nfs(path: str, server: str = NAS) -> dict[str, Any]:
    return {"nfs": {"server": server, "path": path}}


OWN_CLAIM = {"claimRef": {"namespace": "nlp", "name": "census-in-train-1a2b3c4d"}}


def admit(
    guard: TeamVolumes | str, user: str, operation: str, name: str, **spec: Any
) -> bool | None:
    """The guard of a team on one PV request: None when it does not apply to the request,
    else whether every validation holds."""
    t = guard if isinstance(guard, TeamVolumes) else TeamVolumes(guard, guard, None, None, None)
    pv = {"metadata": {"name": name}, "spec": spec}
    activation = celpy.json_to_cel(
        {
            "request": {"operation": operation, "userInfo": {"username": user}},
            "object": None if operation == "DELETE" else pv,
            "oldObject": None if operation == "CREATE" else pv,
        }
    )
    env = celpy.Environment()

    def holds(expression: str) -> bool:
        return bool(env.program(env.compile(expression)).evaluate(activation))

    if not holds(guard_match(t.namespace)):
        return None
    return all(holds(v["expression"]) for v in validations(t))


def test_a_team_runner_may_manage_only_the_pvs_named_after_its_namespace() -> None:
    nlp = RUNNER.format("nlp")
    for operation in ("CREATE", "UPDATE"):
        good = {**OWN_CLAIM, **oss("/nlp/census/train")}
        assert admit(ACK_NLP, nlp, operation, "nlp.census-in-train-1a2b3c4d", **good) is True
        assert admit(ACK_NLP, nlp, operation, "vision.mnist-in-train-1a2b3c4d", **good) is False
        assert admit(ACK_NLP, nlp, operation, "nlpx.run-in-train", **good) is False
    for name, allowed in (("nlp.census", True), ("vision.mnist", False), ("nlpx.run", False)):
        assert admit(ACK_NLP, nlp, "DELETE", name) is allowed


def test_a_team_may_not_manage_the_pvs_of_a_namespace_its_name_prefixes() -> None:
    """Namespace `nlp` used to pass `startsWith('nlp-')` for `nlp-research`'s PVs."""
    nlp = RUNNER.format("nlp")
    pv = {**OWN_CLAIM, **oss("/nlp/x")}
    assert admit(ACK_NLP, nlp, "CREATE", "nlp-research.run-in-x", **pv) is False
    assert admit(ACK_NLP, nlp, "DELETE", "nlp-research.run-in-x") is False
    assert admit(ACK_NLP, nlp, "DELETE", "nlp-research-run-in-x") is False


def test_a_pv_must_be_pre_bound_to_a_claim_of_the_team() -> None:
    nlp = RUNNER.format("nlp")
    name = "nlp.census-in-train-1a2b3c4d"
    other = {"claimRef": {"namespace": "vision", "name": "c"}}
    assert admit(ACK_NLP, nlp, "CREATE", name, **OWN_CLAIM, **oss("/nlp/a")) is True
    assert admit(ACK_NLP, nlp, "CREATE", name, **other, **oss("/nlp/a")) is False
    assert admit(ACK_NLP, nlp, "UPDATE", name, **other, **oss("/nlp/a")) is False
    # unbound: any namespace could claim it with volumeName
    assert admit(ACK_NLP, nlp, "CREATE", name, **oss("/nlp/a")) is False


@pytest.mark.parametrize(
    ("what", "spec"),
    [
        ("a hostPath on the node's root", {"hostPath": {"path": "/"}}),
        ("a hostPath in the team's folder name", {"hostPath": {"path": "/nlp/"}}),
        ("a local volume", {"local": {"path": "/mnt/disks/ssd1"}}),
        ("another CSI driver", {"csi": {"driver": "hostpath.csi.k8s.io", "volumeHandle": "h"}}),
        ("OSS without attributes", {"csi": {"driver": "ossplugin.csi.alibabacloud.com"}}),
        ("NAS outside the team's folder", nfs("/vision/data")),
        ("NAS at the file system's root", nfs("/")),
        ("NAS escaping with ..", nfs("/nlp/../vision")),
        ("NAS on a server not the platform's", nfs("/nlp/x", server="10.0.0.9")),
        ("OSS outside the team's prefix", oss("/vision/mnist")),
        ("OSS at the bucket's root", oss("/")),
        ("OSS escaping with ..", oss("/nlp/../vision/x")),
        ("OSS on a bucket not the platform's", oss("/nlp/x", bucket="someone-elses")),
        ("OSS with another team's role", oss("/nlp/x", role="trainstack-ack-dev-jobs-vision")),
        ("OSS with no role", oss("/nlp/x", role=None)),
        ("a prefix that only starts like the team's", oss("/nlpx/y")),
    ],
)
def test_the_guard_refuses_sources_outside_the_team(what: str, spec: dict[str, Any]) -> None:
    nlp = RUNNER.format("nlp")
    name = "nlp.census-in-train-1a2b3c4d"
    assert admit(ACK_NLP, nlp, "CREATE", name, **OWN_CLAIM, **spec) is False, what
    # the policy rule that checks plans says the same (one source: volumeguard.py)
    assert pv_problem(spec, ACK_NLP) is not None, what


@pytest.mark.parametrize(
    "spec",
    [oss("/nlp/census/train/"), oss("/nlp", bucket=BUCKETS[0]), nfs("/nlp/shared/x"), nfs("/nlp")],
)
def test_the_guard_admits_the_teams_own_storage(spec: dict[str, Any]) -> None:
    name = "nlp.census-in-train-1a2b3c4d"
    assert admit(ACK_NLP, RUNNER.format("nlp"), "CREATE", name, **OWN_CLAIM, **spec) is True
    assert pv_problem(spec, ACK_NLP) is None


def test_kubeconfig_mode_admits_any_bucket_with_the_teams_own_secret_only() -> None:
    nlp = RUNNER.format("nlp")
    name = "nlp.x-in-a-1a2b3c4d"
    own = oss("/nlp/a", bucket="anything", role=None)
    own["csi"]["nodePublishSecretRef"] = {"name": "trainstack-oss", "namespace": "nlp"}
    theirs = oss("/nlp/a", bucket="anything", role=None)
    theirs["csi"]["nodePublishSecretRef"] = {"name": "trainstack-oss", "namespace": "vision"}
    assert admit(LOCAL_NLP, nlp, "CREATE", name, **OWN_CLAIM, **own) is True
    assert admit(LOCAL_NLP, nlp, "CREATE", name, **OWN_CLAIM, **theirs) is False
    assert admit(LOCAL_NLP, nlp, "CREATE", name, **OWN_CLAIM, hostPath={"path": "/data"}) is False


def test_the_guard_leaves_other_users_alone() -> None:
    # another team's runner is its own guard's business; the PV binder (which sets claimRef when
    # it binds) and cluster admins are not matched at all
    for user in (
        RUNNER.format("vision"),
        "system:serviceaccount:kube-system:persistent-volume-binder",
        "system:serviceaccount:nlp:default",
        "kubernetes-admin",
    ):
        assert admit(ACK_NLP, user, "DELETE", "vision.x") is None, user


def test_ack_refuses_a_kubernetes_version_without_admission_policies(mocks: Any) -> None:
    with pytest.raises(ConfigError, match=r"kubernetesVersion: expected Kubernetes 1\.30 or later"):
        build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.28.3-aliyun.1"})
    build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.31.1-aliyun.1"})


@pytest.mark.parametrize(
    ("run", "team"),
    [("mnist-ddp/runs/baseline.yaml", "vision"), ("census-tf/runs/ps-4-workers.yaml", "nlp")],
)
def test_what_the_renderer_makes_for_a_team_its_guard_admits(
    mocks: Any, run: str, team: str
) -> None:
    """The two halves agree: every PV the renderer makes for a team's run on ack-dev (names,
    claimRef, OSS path and role) passes that team's admission policy, as built by the platform."""
    from trainstack.infra.run.rendered import for_environment
    from trainstack.render import render_run
    from trainstack.spec import load_run

    outputs = build(mocks, "ack-dev")
    settled = {k: mocks.resolve(v)[0] for k, v in outputs.items()}
    (policy,) = [
        r.inputs["spec"]
        for r in mocks.of_type(POLICY)
        if r.inputs["metadata"]["name"] == f"trainstack-team-volumes-{team}"
    ]
    spec = load_run(REPO / "components" / run)
    completed, options = for_environment(settled, spec, "ack-dev")
    volumes = [m for m in render_run(completed, options=options) if m["kind"] == "PersistentVolume"]
    assert volumes
    env = celpy.Environment()
    for pv in volumes:
        activation = celpy.json_to_cel(
            {
                "request": {"operation": "CREATE", "userInfo": {"username": RUNNER.format(team)}},
                "object": pv,
                "oldObject": None,
            }
        )
        for v in policy["validations"]:
            assert env.program(env.compile(v["expression"])).evaluate(activation), (
                pv["metadata"]["name"],
                v["message"],
            )
