"""Deny by default admits exactly what trainstack renders, queued or not: a team namespace's pod
guard (trainstack/infra/platform/podguard.py) admits a queued KubeDL job — its queue label and
pod group on every replica's template — and its pods as Kueue's pod webhook leaves them (the
scheduling gate, Kueue's finalizer, its `managed` label and role hash: Kueue v0.19.2
pkg/controller/jobs/pod/pod_webhook.go:104-190) after the API server's own admission, evaluated
as the API server does (tests/infra/admission.py)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from tests.infra.admission import Evaluator, Request, policies_named, refusals
from tests.infra.test_pod_guard import POLICY, admission_additions
from tests.infra.test_team_access import build
from tests.kubedl.expand import expand
from tests.render.conftest import KUBEDL_CASES
from trainstack.kueue import api
from trainstack.render import render_run

EVALUATOR = Evaluator()
TEAM = "vision"


def _ack_dev(mocks: Any) -> dict[str, Any]:
    build(mocks, "ack-dev")
    return policies_named(mocks.of_type(POLICY), "")


def _queued() -> list[dict[str, Any]]:
    case = next(c for c in KUBEDL_CASES if c.name == "kind-pytorch")
    options = replace(case.options, namespace=TEAM, queue="trainstack")
    return render_run(case.run(), options=options)


def test_a_queued_kubedl_job_and_its_gated_pods_are_admitted(built_once: Any) -> None:
    policies = built_once(_ack_dev)
    manifests = _queued()
    job = next(m for m in manifests if m["kind"] == "PyTorchJob")
    assert job["metadata"]["labels"][api.QUEUE_LABEL] == "trainstack"
    submitted = Request(
        operation="CREATE",
        object=job,
        resource={"group": "training.kubedl.io", "version": "v1alpha1", "resource": "pytorchjobs"},
        username=f"system:serviceaccount:{TEAM}:trainstack-runner",
    )
    assert refusals(policies, submitted, evaluator=EVALUATOR) == []
    pods = expand(manifests).pods
    assert pods
    for sketch in pods:
        spec = admission_additions(copy.deepcopy(sketch.spec))
        spec["schedulingGates"] = [{"name": api.ADMISSION_GATE}]
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": sketch.name,
                "namespace": TEAM,
                "labels": {**sketch.labels, "kueue.x-k8s.io/managed": "true"},
                "annotations": {**sketch.annotations, api.ROLE_HASH_ANNOTATION: "1b2c3d4e"},
                "finalizers": ["kueue.x-k8s.io/managed"],
            },
            "spec": spec,
        }
        created = Request(
            operation="CREATE",
            object=obj,
            resource={"group": "", "version": "v1", "resource": "pods"},
            username="system:serviceaccount:kubedl-system:kubedl",
        )
        assert refusals(policies, created, evaluator=EVALUATOR) == [], sketch.name


def test_the_queue_labels_are_no_route_around_the_guard(built_once: Any) -> None:
    """The labels change nothing the guard looks at: a hostile queued job is still refused."""
    policies = built_once(_ack_dev)
    job = next(m for m in _queued() if m["kind"] == "PyTorchJob")
    hostile = copy.deepcopy(job)
    for spec in hostile["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["nodeName"] = "cn-hangzhou.10.0.0.1"
    refused = refusals(
        policies,
        Request(
            operation="CREATE",
            object=hostile,
            resource={
                "group": "training.kubedl.io",
                "version": "v1alpha1",
                "resource": "pytorchjobs",
            },
            username=f"system:serviceaccount:{TEAM}:trainstack-runner",
        ),
        evaluator=EVALUATOR,
    )
    assert refused and all(m.startswith(f"team namespace {TEAM}: ") for m in refused)
