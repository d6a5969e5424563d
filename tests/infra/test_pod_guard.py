"""Deny by default for pods: a team namespace admits only the pod shapes trainstack renders
(trainstack/infra/platform/podguard.py), whoever creates the pod — the team, KubeDL or the Job
controller — and refuses a job whose pod templates would make anything else when it is submitted.

Pod Security ``baseline`` (what team namespaces enforce) refuses hostPath among volume types and
nothing else of what follows: an inline NFS volume on the platform NAS's root, any other inline
source, ``nodeName``, a toleration of the system pool's taint, the system PriorityClasses. Until
the pod guard, every route below was admitted by every policy the platform registered.

The policies are evaluated as the plugin registered them, by tests/infra/admission.py (cel-python
with the API server's matchConstraints, matchConditions and variables), on objects shaped as the
API server holds them after its mutating admission (the ServiceAccount plugin's projected volume,
DefaultTolerationSeconds' tolerations).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.admission import Evaluator, Request, policies_named, refusals
from tests.infra.test_team_access import build
from trainstack.platformnames import ENV_TAG

REPO = Path(__file__).resolve().parents[2]
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NAS = "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com"  # what the mocks give the mount target
EVALUATOR = Evaluator()

PODS = {"group": "", "version": "v1", "resource": "pods"}
JOBS = {"group": "batch", "version": "v1", "resource": "jobs"}
PYTORCHJOBS = {"group": "training.kubedl.io", "version": "v1alpha1", "resource": "pytorchjobs"}
TRAINJOBS = {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"}


def admission_additions(spec: dict[str, Any]) -> dict[str, Any]:
    """What the API server's mutating admission adds to a pod before validating admission runs:
    the ServiceAccount plugin's token volume (plugin/pkg/admission/serviceaccount/admission.go)
    and DefaultTolerationSeconds' two tolerations (plugin/pkg/admission/
    defaulttolerationseconds/admission.go)."""
    out = copy.deepcopy(spec)
    out.setdefault("volumes", []).append(
        {
            "name": "kube-api-access-x7k2p",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ],
            },
        }
    )
    tolerations = out.get("tolerations") or []
    keys = {t.get("key") for t in tolerations}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if key not in keys:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    out["tolerations"] = tolerations
    return out


def pod_spec(**extra: Any) -> dict[str, Any]:
    """A pod spec as trainstack renders one (then admission's additions), plus ``extra``."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pytorch",
                "image": "registry.example.com/acme/torch:2.3",
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "config", "configMap": {"name": "run-config"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "run-in-train"}},
        ],
        "priorityClassName": "trainstack-priority-3",
        "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    spec = admission_additions(spec)
    spec.update(extra)
    return spec


def pod(namespace: str, spec: dict[str, Any]) -> Request:
    return Request(
        operation="CREATE",
        object={"metadata": {"name": "x-worker-0", "namespace": namespace}, "spec": spec},
        resource=PODS,
    )


def job(namespace: str, spec: dict[str, Any]) -> Request:
    return Request(
        operation="CREATE",
        object={
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "x", "namespace": namespace},
            "spec": {"template": {"spec": spec}},
        },
        resource=JOBS,
        username=f"system:serviceaccount:{namespace}:trainstack-runner",
    )


def pytorchjob(namespace: str, spec: dict[str, Any], **annotations: str) -> Request:
    meta: dict[str, Any] = {"name": "x", "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    replica = {"replicas": 1, "restartPolicy": "ExitCode", "template": {"spec": spec}}
    return Request(
        operation="CREATE",
        object={
            "apiVersion": "training.kubedl.io/v1alpha1",
            "kind": "PyTorchJob",
            "metadata": meta,
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": copy.deepcopy(replica)}},
        },
        resource=PYTORCHJOBS,
        username=f"system:serviceaccount:{namespace}:trainstack-runner",
    )


def _built(mocks: Any, env: str, **overrides: str) -> tuple[dict[str, Any], dict[str, Any]]:
    outputs = build(mocks, env, **overrides)
    settled = {k: mocks.resolve(v)[0] for k, v in outputs.items()}
    return policies_named(mocks.of_type(POLICY), ""), settled


def _ack_dev(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return _built(mocks, "ack-dev")


def _local(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return _built(mocks, "local")


TRAINER = {"trainstack:operator": "trainer"}


def _ack_dev_trainer(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return _built(mocks, "ack-dev", **TRAINER)


def _local_trainer(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return _built(mocks, "local", **TRAINER)


# Each environment's build is read once per module (``built_once``): the tests only read the
# registered policies and the settled outputs, each from a copy of its own.
BUILT = {"ack-dev": _ack_dev, "local": _local}
# The same environments with Kubeflow Trainer running their jobs.
BUILT_TRAINER = {"ack-dev": _ack_dev_trainer, "local": _local_trainer}


def registered(built_once: Any, env: str) -> dict[str, Any]:
    return built_once(BUILT[env])[0]  # type: ignore[no-any-return]


def _volume(name: str, source: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod_spec()["volumes"], {"name": name, **source}]


CRITICAL_ADDONS = {"key": "CriticalAddonsOnly", "operator": "Exists"}
HOSTILE: dict[str, dict[str, Any]] = {
    # the platform NAS's root, read-write as root: every team's folder
    "inline nfs on the NAS root": {
        "volumes": _volume("nas", {"nfs": {"server": NAS, "path": "/"}})
    },
    "inline iscsi": {
        "volumes": _volume(
            "d", {"iscsi": {"targetPortal": "10.0.0.9:3260", "iqn": "iqn.x:y", "lun": 0}}
        )
    },
    "inline cephfs": {"volumes": _volume("c", {"cephfs": {"monitors": ["10.0.0.9:6789"]}})},
    "inline rbd": {"volumes": _volume("r", {"rbd": {"monitors": ["10.0.0.9:6789"], "image": "x"}})},
    "inline glusterfs": {
        "volumes": _volume("g", {"glusterfs": {"endpoints": "gluster", "path": "vol"}})
    },
    "inline csi (OSS driver, whole bucket)": {
        "volumes": _volume(
            "o",
            {
                "csi": {
                    "driver": "ossplugin.csi.alibabacloud.com",
                    "volumeAttributes": {"bucket": "acme-trainstack-dev-data", "path": "/"},
                }
            },
        )
    },
    "hostPath": {"volumes": _volume("h", {"hostPath": {"path": "/"}})},
    "a memory emptyDir without a size limit": {
        "volumes": _volume("m", {"emptyDir": {"medium": "Memory"}})
    },
    "a projected cluster trust bundle": {
        "volumes": _volume(
            "p", {"projected": {"sources": [{"clusterTrustBundle": {"signerName": "x"}}]}}
        )
    },
    "nodeName": {"nodeName": "cn-hangzhou.10.1.0.7"},
    "the system pool's toleration": {"tolerations": [*pod_spec()["tolerations"], CRITICAL_ADDONS]},
    "a toleration of every taint": {"tolerations": [{"operator": "Exists"}]},
    "the GPU toleration widened to every effect": {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    },
    "system-node-critical": {"priorityClassName": "system-node-critical"},
    "system-cluster-critical": {"priorityClassName": "system-cluster-critical"},
    "a class above the team's maxPriority": {"priorityClassName": "trainstack-priority-9"},
    "hostNetwork": {"hostNetwork": True},
    "hostPID": {"hostPID": True},
    "hostAliases": {"hostAliases": [{"ip": "100.100.100.200", "hostnames": ["oss"]}]},
    "runtimeClassName": {"runtimeClassName": "runc-privileged"},
    "a privileged container": {
        "containers": [{"name": "pytorch", "image": "x", "securityContext": {"privileged": True}}]
    },
    "an added capability": {
        "containers": [
            {
                "name": "pytorch",
                "image": "x",
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
            }
        ]
    },
    "a host port": {
        "containers": [
            {"name": "pytorch", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}
        ]
    },
    "an init container with a raw block device": {
        "initContainers": [
            {"name": "prep", "image": "x", "volumeDevices": [{"name": "d", "devicePath": "/dev/x"}]}
        ]
    },
}


@pytest.mark.parametrize("env", ["ack-dev", "local"])
@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_every_route_out_of_a_team_is_refused_as_pod_job_and_kubedl_job(
    built_once: Any, env: str, what: str
) -> None:
    policies = registered(built_once, env)
    spec = pod_spec(**HOSTILE[what])
    if env == "local" and what == "hostPath":
        # The shipped local environment is one user's kind (hostPathVolumes: true): its file://
        # bindings are hostPath volumes. Its other checks still hold (below).
        assert not refusals(policies, pod("nlp", spec), evaluator=EVALUATOR)
        return
    for request in (pod("nlp", spec), job("nlp", spec), pytorchjob("nlp", spec)):
        refused = refusals(policies, request, evaluator=EVALUATOR)
        assert refused, f"{what} admitted as a {request.resource['resource']} on {env}"
        assert all(m.startswith("team namespace nlp: ") for m in refused), refused


def test_a_kubedl_job_asking_for_host_networking_is_refused_when_submitted(built_once: Any) -> None:
    policies = registered(built_once, "ack-dev")
    hostile = pytorchjob("vision", pod_spec(), **{"kubedl.io/network-mode": "host"})
    assert refusals(policies, hostile, evaluator=EVALUATOR) == [
        "team namespace vision: annotation kubedl.io/network-mode: host would run the job's "
        "pods on the node's network"
    ]
    assert not refusals(policies, pytorchjob("vision", pod_spec()), evaluator=EVALUATOR)


def test_a_pod_shaped_as_trainstack_renders_it_is_admitted(built_once: Any) -> None:
    policies = registered(built_once, "ack-dev")
    for request in (pod("nlp", pod_spec()), job("nlp", pod_spec()), pytorchjob("nlp", pod_spec())):
        assert refusals(policies, request, evaluator=EVALUATOR) == []


def test_the_priority_allow_list_is_the_teams_own(built_once: Any) -> None:
    """vision's maxPriority is 7, nlp's 5 (Pulumi.ack-dev.yaml)."""
    policies = registered(built_once, "ack-dev")
    for p, vision, nlp in ((5, True, True), (6, True, False), (7, True, False), (8, False, False)):
        spec = pod_spec(priorityClassName=f"trainstack-priority-{p}")
        for namespace, allowed in (("vision", vision), ("nlp", nlp)):
            refused = refusals(policies, pod(namespace, spec), evaluator=EVALUATOR)
            assert (refused == []) is allowed, (namespace, p, refused)


def test_each_team_gets_one_pod_guard_bound_to_deny_on_its_namespace(mocks: Any) -> None:
    build(mocks, "ack-dev")
    policies = policies_named(mocks.of_type(POLICY), "trainstack-team-pods-")
    assert sorted(policies) == ["trainstack-team-pods-nlp", "trainstack-team-pods-vision"]
    for name, spec in policies.items():
        namespace = name.removeprefix("trainstack-team-pods-")
        constraints = spec["matchConstraints"]
        assert constraints["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": namespace}
        }
        resources = {(r["apiGroups"][0], r["resources"][0]) for r in constraints["resourceRules"]}
        assert resources == {
            ("", "pods"),
            ("batch", "jobs"),
            *(
                ("training.kubedl.io", p)
                for p in ("tfjobs", "pytorchjobs", "xgboostjobs", "mpijobs")
            ),
            ("inference.kubedl.io", "elasticbatchjobs"),
        }
        assert spec["failurePolicy"] == "Fail"
    bindings = policies_named(mocks.of_type(POLICY_BINDING), "trainstack-team-pods-")
    assert bindings == {
        name: {"policyName": name, "validationActions": ["Deny"]} for name in policies
    }


def test_another_namespace_is_left_alone(built_once: Any) -> None:
    policies = registered(built_once, "ack-dev")
    hostile = pod_spec(nodeName="n1", priorityClassName="system-node-critical")
    assert refusals(policies, pod("kube-system", hostile), evaluator=EVALUATOR) == []


def _targeted() -> list[tuple[Path, str]]:
    from trainstack.spec import load_run

    return [
        (path, env)
        for path in sorted(REPO.glob("components/*/runs/*.yaml"))
        if (env := load_run(path).tags.get(ENV_TAG)) is not None
    ]


@pytest.mark.parametrize(
    ("path", "env"), _targeted(), ids=lambda v: v if isinstance(v, str) else v.parent.parent.name
)
def test_every_shipped_run_renders_jobs_and_pods_its_teams_guard_admits(
    built_once: Any, path: Path, env: str
) -> None:
    """The renderer and the policy cannot drift: every shipped run, rendered for the
    environment it is written for, submits a job its team's namespace admits, and every pod the
    operator (or the Job controller) then makes from it is admitted too."""
    from tests.kubedl.expand import expand, find_job
    from trainstack.infra.run.rendered import for_environment
    from trainstack.render import render_run
    from trainstack.spec import load_run

    policies, settled = built_once(BUILT[env])
    completed, options = for_environment(settled, load_run(path), env)
    manifests = render_run(completed, options=options)
    the_job = find_job(manifests)
    namespace = the_job["metadata"]["namespace"]
    group, _, version = the_job["apiVersion"].rpartition("/")
    submitted = Request(
        operation="CREATE",
        object=the_job,
        resource={"group": group, "version": version, "resource": the_job["kind"].lower() + "s"},
        username=f"system:serviceaccount:{namespace}:trainstack-runner",
    )
    assert refusals(policies, submitted, evaluator=EVALUATOR) == []
    pods = expand(manifests).pods
    assert pods
    for made in pods:
        spec = admission_additions(made.spec)
        request = pod(namespace, spec)
        assert refusals(policies, request, evaluator=EVALUATOR) == [], made.name


def _trainer_runs() -> list[tuple[Path, str]]:
    from trainstack.spec import load_run
    from trainstack.trainer import runs

    return [(p, env) for p, env in _targeted() if runs("trainer", load_run(p).component.job_type)]


@pytest.mark.parametrize(
    ("path", "env"),
    _trainer_runs(),
    ids=lambda v: v if isinstance(v, str) else f"{v.parent.parent.name}-{v.stem}",
)
def test_on_trainer_every_shipped_run_it_runs_makes_pods_its_teams_guard_admits(
    built_once: Any, path: Path, env: str
) -> None:
    """The same for the environment with `trainstack:operator: trainer`: the TrainJob (or Job)
    the run renders, and every pod Trainer and JobSet make of it on trainstack's runtime
    (tests/trainer/expand.py), as the API server admits them."""
    from tests.trainer.expand import expand
    from trainstack.infra.run.rendered import for_environment
    from trainstack.render import render_run
    from trainstack.spec import load_run

    policies, settled = built_once(BUILT_TRAINER[env])
    assert settled["operator"] == "trainer"
    completed, options = for_environment(settled, load_run(path), env)
    manifests = render_run(completed, options=options)
    kinds = {m["kind"] for m in manifests}
    if "TrainJob" not in kinds:  # a custom run stays a Job on either operator
        assert "Job" in kinds
        return
    pods = expand(manifests)
    assert pods
    (train_job,) = [m for m in manifests if m["kind"] == "TrainJob"]
    namespace = train_job["metadata"]["namespace"]
    assert refusals(policies, trainjob_request(train_job), evaluator=EVALUATOR) == []
    # an MPI run's own runtime, submitted before its TrainJob, holds the pod templates
    for runtime in [m for m in manifests if m["kind"] == "TrainingRuntime"]:
        assert refusals(policies, runtime_request(runtime), evaluator=EVALUATOR) == []
    for made in pods:
        request = pod(namespace, admission_additions(made.spec))
        assert refusals(policies, request, evaluator=EVALUATOR) == [], made.name


def trainjob_request(train_job: dict[str, Any]) -> Request:
    namespace = train_job["metadata"]["namespace"]
    return Request(
        operation="CREATE",
        object=train_job,
        resource=TRAINJOBS,
        username=f"system:serviceaccount:{namespace}:trainstack-runner",
    )


def runtime_request(runtime: dict[str, Any]) -> Request:
    namespace = runtime["metadata"]["namespace"]
    return Request(
        operation="CREATE",
        object=runtime,
        resource={
            "group": "trainer.kubeflow.org",
            "version": "v1alpha1",
            "resource": "trainingruntimes",
        },
        username=f"system:serviceaccount:{namespace}:trainstack-runner",
    )


def _train_job(
    namespace: str, *patch_specs: dict[str, Any], runtime: str = "torch-distributed"
) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "x", "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {"image": "torch:2.3", "numNodes": 2},
            "runtimePatches": [
                {
                    "manager": f"example.com/manager-{i}",
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {"spec": {"template": {"spec": spec}}},
                                    }
                                ]
                            }
                        }
                    },
                }
                for i, spec in enumerate(patch_specs)
            ],
        },
    }


def test_on_trainer_a_trainjobs_patches_are_held_to_the_pod_guard_when_it_is_submitted(
    built_once: Any,
) -> None:
    """A TrainJob carries its pods' team-side fields in runtime patches (any number, up to 16:
    Kueue adds its own beside trainstack's). Each is checked as a pod's would be, so a patch
    mounting the NAS's root is refused when the TrainJob is submitted, not pod by pod; a patch
    that only schedules passes."""
    policies, _ = built_once(BUILT_TRAINER["ack-dev"])
    nas = {"volumes": [{"name": "nas", "nfs": {"server": NAS, "path": "/"}}]}
    scheduling = {"nodeSelector": {"trainstack.dev/pool": "gpu-a10"}}
    privileged = {"containers": [{"name": "node", "securityContext": {"privileged": True}}]}
    assert (
        refusals(policies, trainjob_request(_train_job("vision", scheduling)), evaluator=EVALUATOR)
        == []
    )
    for hostile in (nas, privileged):
        for patches in ((hostile,), (scheduling, hostile), (*[scheduling] * 15, hostile)):
            refused = refusals(
                policies, trainjob_request(_train_job("vision", *patches)), evaluator=EVALUATOR
            )
            assert refused, (hostile, len(patches))


def test_on_trainer_a_trainjob_names_only_the_platforms_runtimes(built_once: Any) -> None:
    policies, _ = built_once(BUILT_TRAINER["ack-dev"])
    for name, spec in policies_named_pods(policies).items():
        rules = spec["matchConstraints"]["resourceRules"]
        assert {
            "apiGroups": ["trainer.kubeflow.org"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainjobs"],
        } in rules, name
        assert {
            "apiGroups": ["trainer.kubeflow.org"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainingruntimes"],
        } in rules, name
    for name in ("torch-distributed", "xgboost-distributed-priority-3"):
        assert (
            refusals(
                policies, trainjob_request(_train_job("vision", runtime=name)), evaluator=EVALUATOR
            )
            == []
        )
    own = _train_job("vision", runtime="my-runtime")
    (message,) = refusals(policies, trainjob_request(own), evaluator=EVALUATOR)
    assert "spec.runtimeRef must name one of the platform's ClusterTrainingRuntimes" in message
    # A TrainingRuntime is namespaced: the one it names is in its own namespace, its pod
    # templates held to this guard when they were submitted (an MPI run's own). Before, refused.
    namespaced = _train_job("vision", runtime="my-runtime")
    namespaced["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    assert refusals(policies, trainjob_request(namespaced), evaluator=EVALUATOR) == []
    elsewhere = _train_job("vision", runtime="my-runtime")
    elsewhere["spec"]["runtimeRef"]["apiGroup"] = "example.com"
    elsewhere["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    assert refusals(policies, trainjob_request(elsewhere), evaluator=EVALUATOR)


def test_on_trainer_a_teams_own_runtime_is_held_to_the_pod_guard(built_once: Any) -> None:
    """A team may create TrainingRuntimes (an MPI run renders its own): each replicated job's
    pod template is checked as a pod's, so one mounting the NAS's root or running privileged is
    refused when it is submitted."""
    from tests.render.conftest import ON_TRAINER, SPECS
    from trainstack.render import render_run
    from trainstack.spec import load_run

    policies, _ = built_once(BUILT_TRAINER["ack-dev"])
    (runtime,) = [
        d
        for d in render_run(load_run(SPECS / "mpi.run.yaml"), options=ON_TRAINER)
        if d["kind"] == "TrainingRuntime"
    ]
    runtime["metadata"]["namespace"] = "vision"
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"].pop("priorityClassName", None)
    assert refusals(policies, runtime_request(runtime), evaluator=EVALUATOR) == []
    nas = {"name": "nas", "nfs": {"server": NAS, "path": "/"}}
    for job in (0, 1):
        hostile = json.loads(json.dumps(runtime))
        pod = hostile["spec"]["template"]["spec"]["replicatedJobs"][job]["template"]["spec"]
        pod["template"]["spec"]["volumes"].append(nas)
        assert refusals(policies, runtime_request(hostile), evaluator=EVALUATOR), job
        privileged = json.loads(json.dumps(runtime))
        pod = privileged["spec"]["template"]["spec"]["replicatedJobs"][job]["template"]["spec"]
        pod["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        assert refusals(policies, runtime_request(privileged), evaluator=EVALUATOR), job


def policies_named_pods(policies: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in policies.items() if k.startswith("trainstack-team-pods-")}
