"""A queued KubeDL job as Kueue v0.19.2 sees it (trainstack/kueue/podgroup.py): every replica's
pod template of every kind carries the group's labels and annotation, the pods KubeDL creates
form one Workload of exactly the group's count, and a replica KubeDL recreates belongs to its
group and role; Kueue keeps the failed pod's name taken by its finalizer until a replacement
exists, and KubeDL's replacement needs that name: without the platform's finalizer releaser it
never comes, with it the recreated replica takes its role's place in the group. The pods are
what KubeDL would make of the rendered manifests (tests/kubedl/expand.py)."""

from __future__ import annotations

import copy
from dataclasses import replace as copy_with
from typing import Any

import pytest

from tests.kubedl.expand import PodSketch, expand
from tests.render.conftest import KUBEDL_CASES, Case
from trainstack.infra.platform import kueue_releaser
from trainstack.kubedl.kinds import job_kind
from trainstack.kueue import api
from trainstack.kueue.podgroup import (
    GroupPod,
    Workload,
    compose,
    finished,
    group_metadata,
    match,
    replace,
    role_shape,
    ungated,
)
from trainstack.kueue.releaser import releasable
from trainstack.render import RenderOptions, render_run

QUEUE = "trainstack"
# one case per KubeDL kind: TFJob, PyTorchJob, XGBoostJob, ElasticBatchJob, MPIJob
KIND_CASES = [c for c in KUBEDL_CASES if c.name.startswith("kind-") and c.name != "kind-custom"]


def _queued(case: Case) -> tuple[dict[str, Any], list[PodSketch]]:
    options = copy_with(case.options, queue=QUEUE)
    manifests = render_run(case.run(), options=options)
    expansion = expand(manifests)
    return expansion.job, expansion.pods


def _group(pods: list[PodSketch]) -> list[GroupPod]:
    return [GroupPod.of(p.name, p.labels, p.annotations, p.spec) for p in pods]


def _running(pods: list[GroupPod]) -> list[GroupPod]:
    return [copy_with(p, phase="Running", gated=False, on_node=True) for p in pods]


@pytest.mark.parametrize("case", KIND_CASES, ids=[c.name for c in KIND_CASES])
def test_every_replica_of_every_kubedl_kind_carries_the_group(case: Case) -> None:
    job, pods = _queued(case)
    name = job["metadata"]["name"]
    assert job["metadata"]["labels"][api.QUEUE_LABEL] == QUEUE
    assert pods, "KubeDL makes pods of the job"
    labels, annotations = group_metadata(name, len(pods), QUEUE)
    for pod in pods:
        assert labels.items() <= pod.labels.items(), pod.name
        assert annotations.items() <= pod.annotations.items(), pod.name
    # every role's template (not only the pods of one) carries them
    kind = job_kind(case.run().job_type)
    assert kind.replicas_key is not None
    for spec in job["spec"][kind.replicas_key].values():
        meta = spec["template"]["metadata"]
        assert meta["labels"][api.POD_GROUP_NAME_LABEL] == name
        assert meta["annotations"][api.POD_GROUP_TOTAL_COUNT_ANNOTATION] == str(len(pods))


@pytest.mark.parametrize("case", KIND_CASES, ids=[c.name for c in KIND_CASES])
def test_the_pods_form_one_workload_of_exactly_the_groups_count(case: Case) -> None:
    job, pods = _queued(case)
    group = _group(pods)
    workload = compose(group)
    assert isinstance(workload, Workload), workload
    assert workload.name == job["metadata"]["name"]
    assert sum(workload.podsets.values()) == len(pods)
    # one PodSet per role shape: the pods of a role share theirs
    by_role: dict[str, set[str]] = {}
    for sketch, pod in zip(pods, group, strict=True):
        by_role.setdefault(sketch.role, set()).add(pod.role)
    assert all(len(shapes) == 1 for shapes in by_role.values()), by_role
    # a group short of one pod has no Workload yet: all pods must exist while gated
    assert compose(group[:-1]) == f"'{workload.name}' group has fewer runnable pods than expected"


def _deleted(job: dict[str, Any], pod: PodSketch) -> dict[str, Any]:
    """`pod` as the API server holds it once it failed and KubeDL deleted it: KubeDL's
    controller reference (KubeDL v0.5.0 pkg/job_controller/job_controller.go:132-144), Kueue's
    finalizer (its webhook's), a deletion timestamp, on its node, Failed."""
    meta = job["metadata"]
    return {
        "metadata": {
            "name": pod.name,
            "namespace": meta.get("namespace", "vision"),
            "labels": dict(pod.labels),
            "annotations": dict(pod.annotations),
            "finalizers": [api.POD_FINALIZER],
            "deletionTimestamp": "2026-12-03T06:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": job["apiVersion"],
                    "kind": job["kind"],
                    "name": meta["name"],
                    "uid": "0f0e",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {**pod.spec, "nodeName": "node-a"},
        "status": {"phase": "Failed"},
    }


@pytest.mark.parametrize("case", KIND_CASES, ids=[c.name for c in KIND_CASES])
def test_a_recreated_replica_belongs_to_its_group_and_rejoins_it_once_released(
    case: Case,
) -> None:
    job, pods = _queued(case)
    group = _running(_group(pods))
    workload = compose(group)
    assert isinstance(workload, Workload)
    workload = copy_with(workload, admitted=True)
    failed = pods[-1]
    # KubeDL recreates the replica from its template: same labels and annotations, same shape
    # (env, hostnames and names are no part of it), under the same name.
    again = copy.deepcopy(failed.spec)
    for c in again["containers"]:
        c["env"] = [*c.get("env", []), {"name": "RESTARTED", "value": "1"}]
    new = GroupPod.of(failed.name, failed.labels, failed.annotations, again)
    assert new.group == job["metadata"]["name"] and new.total == len(pods)
    assert new.role == next(p.role for p in group if p.name == failed.name)
    assert new.role in workload.podsets

    # Had it a new name (as a Job's pods do), Kueue would take it in: the Workload kept, the
    # failed pod finalized as replaced, the new one ungated, the group not finished.
    fresh = copy_with(new, name=failed.name + "-x")
    joined = replace(workload, group, failed.name, fresh)
    assert joined.blocked is None
    assert joined.match.equivalent and joined.match.absent == 0
    assert joined.match.replaced == (failed.name,)
    assert not joined.finished
    assert not next(p for p in joined.pods if p.name == fresh.name).gated

    # KubeDL reuses the name: the failed pod stays (Kueue's finalizer) and the group waits for
    # its replacement for good.
    stuck = replace(workload, group, failed.name, new)
    assert stuck.blocked is not None and "same name" in stuck.blocked
    assert stuck.match.equivalent and stuck.match.absent == 1 and not stuck.match.replaced
    assert not stuck.finished

    # The platform's releaser frees the deleted pod (it decides on the pod as the API server
    # holds it): the Workload waits for one pod, then the one KubeDL creates under the freed
    # name takes the role's place, ungated, the Workload kept, the group not finished.
    rules = kueue_releaser.rules()
    freed = replace(
        workload,
        group,
        failed.name,
        new,
        release=lambda n: releasable(_deleted(job, failed), rules),
    )
    assert freed.blocked is None and freed.absent_meanwhile == 1
    assert freed.match.equivalent and freed.match.absent == 0 and not freed.match.excess
    assert [p.name for p in freed.pods].count(failed.name) == 1
    again_in = next(p for p in freed.pods if p.name == failed.name)
    assert not again_in.gated and again_in.phase == "Pending" and not again_in.deleting
    assert not freed.finished


def test_a_group_finishes_when_all_its_pods_succeed_not_before() -> None:
    _, pods = _queued(KIND_CASES[1])
    group = _running(_group(pods))
    workload = compose(group)
    assert isinstance(workload, Workload)
    done = [copy_with(p, phase="Succeeded") for p in group]
    assert finished(workload, done)
    assert not finished(workload, [*done[:-1], copy_with(group[-1], phase="Failed")])
    unretriable = copy_with(
        group[-1],
        phase="Failed",
        annotations={**group[-1].annotations, api.RETRIABLE_IN_GROUP_ANNOTATION: "false"},
    )
    assert finished(workload, [*done[:-1], unretriable])


def test_admission_ungates_every_pod_of_an_admitted_roles_podset() -> None:
    _, pods = _queued(KIND_CASES[0])
    group = _group(pods)
    workload = compose(group)
    assert isinstance(workload, Workload)
    assert all(p.gated for p in ungated(workload, group))  # not admitted yet
    assert not any(p.gated for p in ungated(copy_with(workload, admitted=True), group))


def test_pods_of_one_group_must_agree_on_queue_and_count() -> None:
    _, pods = _queued(KIND_CASES[0])
    group = _group(pods)
    odd = copy_with(group[-1], labels={**group[-1].labels, api.QUEUE_LABEL: "other"})
    assert "different queue names" in str(compose([*group[:-1], odd]))
    assert match(Workload("x", {"zzz": 1}), group).equivalent is False


def test_the_role_shape_ignores_what_kueue_ignores() -> None:
    spec = {
        "containers": [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        "nodeSelector": {"pool": "a10"},
    }
    other = copy.deepcopy(spec)
    other["containers"][0]["image"] = "y"
    other["containers"][0]["env"] = [{"name": "RANK", "value": "1"}]
    other["hostname"] = "w-1"
    assert role_shape(spec) == role_shape(other)
    bigger = copy.deepcopy(spec)
    bigger["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert role_shape(spec) != role_shape(bigger)


def test_plain_render_and_local_runs_are_not_queued() -> None:
    manifests = render_run(KIND_CASES[1].run(), options=RenderOptions())
    assert api.QUEUE_LABEL not in str(manifests)


def test_a_group_whose_job_succeeds_with_pods_left_running_is_not_finished() -> None:
    """KubeDL ends a TFJob when its chief (or worker 0) succeeds and deletes the pods still
    running (cleanPodPolicy Running: the parameter servers). Kueue counts a group finished only
    when all its pods succeeded (pod_controller.go:372-414): the group keeps its quota until the
    run is destroyed (docs/queues.md)."""
    case = next(c for c in KIND_CASES if c.name == "kind-tensorflow")
    _, pods = _queued(case)
    group = _running(_group(pods))
    workload = compose(group)
    assert isinstance(workload, Workload)
    roles = {p.name: s.role for p, s in zip(group, pods, strict=True)}
    assert "ps" in roles.values()
    ended = [
        copy_with(p, phase="Failed", deleting=True)
        if roles[p.name] == "ps"
        else copy_with(p, phase="Succeeded")
        for p in group
    ]
    assert not finished(workload, ended)
