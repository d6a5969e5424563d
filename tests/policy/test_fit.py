"""The fit check, which is the policy rules ``pod-fits-node-pool``, ``job-fits-pools`` and
``team-quota``: real runs planned on the shipped environments and checked as ``trainstack policy
check`` checks them. Runs that do not fit (census single-gpu, 8 vCPU/30 Gi on an 8 vCPU/30 GiB node;
cifar, 4 GPUs per pod on 1-GPU nodes) are refused, more pods than the pools' maxSize are named,
roles without requests count at the team's LimitRange defaults, /dev/shm is charged to the pod's
memory, unknown instance types are named."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.policy.test_rules import CPU_POOL, LOCAL, job, pod_of
from trainstack.envfile import find_project
from trainstack.errors import ConfigError
from trainstack.infra.platform.config_ack import PoolConfig
from trainstack.infra.platform.instancetypes import shape, smallest
from trainstack.infra.platform.nodepools import pool_shapes
from trainstack.plan.service import plan_run, platform_outputs
from trainstack.policy.check import check_plan, evaluate, from_plan
from trainstack.policy.context import build_context
from trainstack.policy.model import NODE_HEADROOM, Context, Level, Violation
from trainstack.policy.rules import RULES
from trainstack.policy.settings import RuleSetting, settings

REPO = Path(__file__).resolve().parents[2]
FIT_RULES = ("pod-fits-node-pool", "job-fits-pools", "team-quota")
GIB = 2**30


@pytest.fixture(scope="module")
def outputs() -> dict[str, Mapping[str, Any]]:
    project = find_project(REPO)
    return {env: platform_outputs(project, env)[0] for env in ("ack-dev", "local")}


def write_run(
    tmp_path: Path, component: str, tags: str, resources: str, extra: str = "", name: str = "r1"
) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\n"
        f"metadata: {{name: {name}, tags: {tags}}}\n"
        f"spec:\n  component: {REPO / 'components' / component / 'component.yaml'}\n"
        f"  resources:\n{resources}{extra}"
    )
    return path


def fit(
    run_file: Path, env: str, outputs: Mapping[str, Mapping[str, Any]], *, queue: bool = False
) -> list[Violation]:
    """The fit rules' violations of the run, as `policy check` (and `plan`) report them; the
    shipped environments queue with Kueue, whose findings (tests/policy/test_queue_fit.py) are
    left out unless `queue`."""
    plan = plan_run(run_file, env, REPO)
    report = check_plan(plan, env, str(run_file), outputs[env], REPO)
    return [
        v
        for v in report.violations
        if (v.rule in FIT_RULES and "Kueue" not in v.found)
        or (queue and (v.rule == "queue-borrowing" or "Kueue" in v.found))
    ]


def test_census_single_gpu_does_not_fit_an_a10_node(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 8, memory: 30Gi, gpu: 1}\n",
    )
    (v,) = fit(run, "ack-dev", outputs)
    assert (v.rule, v.level, v.field) == (
        "pod-fits-node-pool",
        Level.MANDATORY,
        "spec.pytorchReplicaSpecs.Master.template.spec",
    )
    assert "a10: cpu 8 > 6.8; memory 30Gi > 25.5Gi" in v.found  # 15% headroom
    assert "v100: cpu 8 > 6.8; memory 30Gi > 27.2Gi" in v.found


def test_four_gpus_per_pod_do_not_fit_one_gpu_nodes(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    run = write_run(
        tmp_path,
        "cifar-horovod",
        "{team: vision}",
        "    launcher: {replicas: 1, cpu: 6, memory: 24Gi, gpu: 4}\n"
        "    worker: {replicas: 1, cpu: 6, memory: 24Gi, gpu: 4}\n",
        '  inputs: {data: {uri: "oss://acme-trainstack-dev-data/train.npz", type: file}}\n',
    )
    found = fit(run, "ack-dev", outputs)
    assert len(found) == 2
    assert all(v.rule == "pod-fits-node-pool" and "a10: gpus 4 > 1" in v.found for v in found)


def test_cpu_spot_has_no_pool_on_ack_dev(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """ack-dev's spot pool holds GPUs (tainted as such): a CPU spot pod has nowhere to go."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {cpu: 4, memory: 8Gi}\n",
        "  spot: true\n",
    )
    (v,) = fit(run, "ack-dev", outputs)
    assert v.rule == "pod-fits-node-pool"
    assert "spot: taint nvidia.com/gpu not tolerated" in v.found
    assert "cpu: node selector/affinity does not match its labels" in v.found


def test_more_pods_than_the_pools_max_size(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """One 6-vCPU pod per 8-vCPU node; the CPU pool has at most 5 nodes. ack-dev runs KubeDL with
    a gang scheduler, so the job would never start: mandatory there; advisory by default."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 6, memory: 8Gi}\n"
        "    worker: {replicas: 5, cpu: 6, memory: 8Gi}\n",
    )
    (v,) = fit(run, "ack-dev", outputs)
    assert (v.rule, v.level, v.field) == ("job-fits-pools", Level.MANDATORY, "spec")
    assert v.found == (
        "Master, Worker need 6 nodes of pools cpu, whose maxSize allow 5: with gang scheduling "
        "(kube-coscheduler) none of the job's pods ever start"
    )
    # without a gang scheduler the placed pods start: the rule's own level, advisory
    plan = plan_run(run, "ack-dev", REPO)
    ctx = dataclasses.replace(build_context("ack-dev", {}, outputs["ack-dev"]), gang_scheduler=None)
    (plain,) = [
        x for x in evaluate(from_plan(plan), ctx, settings({}, "x")) if x.rule == "job-fits-pools"
    ]
    assert plain.level is Level.ADVISORY and "stay Pending" in plain.found
    # five replicas fit
    fewer = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 6, memory: 8Gi}\n"
        "    worker: {replicas: 4, cpu: 6, memory: 8Gi}\n",
        name="r2",
    )
    assert fit(fewer, "ack-dev", outputs) == []


def test_the_teams_quota_and_pod_count(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    # local: team nlp has 16 CPUs, 64Gi, no GPU, 50 pods; kubeconfig mode has no pools
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 1, memory: 1Gi, gpu: 1}\n"
        "    worker: {replicas: 60, cpu: 0.25, memory: 512Mi}\n",
    )
    (v,) = fit(run, "local", outputs)
    assert v.rule == "team-quota"
    assert "cpu=16, memory=31Gi, gpus=1" in v.found
    assert "(gpus 1 > 0; pods 61 > 50)" in v.found


def test_roles_without_requests_get_the_teams_defaults(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """The rendered pods state no requests; the namespace's LimitRange (default 500m/1Gi, output
    teamDefaults) gives them: 40 pods ask for 20 CPUs, above nlp's 16. The rule counted 0."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1}\n    worker: {replicas: 39}\n",
    )
    # local queues: the ResourceQuota is Kueue's ceiling (nlp's 16 and all vision lends, 32), and
    # Kueue counts the defaults too: beyond nlp's own 16 CPUs, so only by borrowing
    assert not fit(run, "local", outputs)
    (v,) = fit(run, "local", outputs, queue=True)
    assert v.rule == "queue-borrowing" and "cpu 20 > 16 (at most 32" in v.found


def test_a_pod_without_requests_fits_nodes_at_its_defaults() -> None:
    """pod-fits-node-pool counts the defaults too: a team whose containers default to more than
    a node offers."""
    from trainstack.policy.model import ContainerDefaults

    def bare(p: dict[str, Any]) -> None:
        for role in ("Master", "Worker"):
            pod_of(p, role)["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}

    from tests.policy.test_rules import run_rule

    huge = ContainerDefaults(cpu=7.5, memory=GIB, limit_cpu=8, limit_memory=2 * GIB)
    from tests.policy.test_rules import ACK

    ctx = dataclasses.replace(ACK, team_defaults={"vision": huge})
    assert run_rule("pod-fits-node-pool", job(bare)) == []
    found = run_rule("pod-fits-node-pool", job(bare), ctx)
    assert len(found) == 2 and all("a10: cpu 7.5 > 6.8" in v.found for v in found)


def test_shared_memory_is_charged_to_the_pods_memory(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """Validation refuses sharedMemory over a role's memory; a role without memory gets the
    LimitRange's default limit (4Gi), which only the rule knows."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 2, gpu: 1, sharedMemory: 8Gi}\n",
    )
    (v,) = fit(run, "ack-dev", outputs)
    assert (v.rule, v.field) == (
        "pod-fits-node-pool",
        "spec.pytorchReplicaSpecs.Master.template.spec.volumes",
    )
    assert v.found == (
        "memory-backed emptyDir (/dev/shm) of 8Gi is more than the pod's memory limit 4Gi, "
        "which it is charged to"
    )
    enough = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 2, gpu: 1, sharedMemory: 4Gi}\n",
        name="r2",
    )
    assert fit(enough, "ack-dev", outputs) == []


def test_shared_memory_over_a_stated_memory_limit_on_any_platform() -> None:
    """A manifest (a template override) with 4Gi of memory and 8Gi of /dev/shm: flagged in
    kubeconfig mode too, where there are no pools to fit."""
    from tests.policy.test_rules import run_rule

    def shm(p: dict[str, Any]) -> None:
        pod = pod_of(p)
        pod["containers"][0]["resources"] = {
            "requests": {"memory": "4Gi"},
            "limits": {"memory": "4Gi"},
        }
        pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]

    for ctx in (None, LOCAL):
        found = run_rule("pod-fits-node-pool", job(shm), *(() if ctx is None else (ctx,)))
        assert [v.field for v in found] == ["spec.pytorchReplicaSpecs.Worker.template.spec.volumes"]
        assert "8Gi is more than the pod's memory limit 4Gi" in found[0].found


def test_a_pool_is_as_small_as_its_smallest_type_and_unknown_types_are_named(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """A pool of a type whose shape instancetypes.py does not know: pod-fits-node-pool lets the
    pod through (refusing every run on a new type would be wrong), job-fits-pools names the
    types, advisory, as the fit was not checked."""
    assert smallest(("ecs.g7.4xlarge", "ecs.g7.2xlarge")) == shape("ecs.g7.2xlarge")
    odd = PoolConfig(
        name="cpu", instance_types=("ecs.zz9.huge",), min_size=0, max_size=3, gpu=False
    )
    (exported,) = pool_shapes(types.SimpleNamespace(pools=(odd,)))  # type: ignore[arg-type]
    assert (exported["cpu"], exported["maxSize"]) == (None, 3)
    platform = dict(outputs["ack-dev"])
    platform["nodePools"] = [
        exported if p["name"] == "cpu" else p for p in outputs["ack-dev"]["nodePools"]
    ]
    ctx = build_context("ack-dev", {}, platform)
    run = write_run(tmp_path, "mnist-ddp", "{team: nlp}", "    master: {cpu: 1, memory: 1Gi}\n")
    found = [
        v
        for v in evaluate(from_plan(plan_run(run, "ack-dev", REPO)), ctx, settings({}, "x"))
        if v.rule in FIT_RULES
    ]
    assert [(v.rule, v.level) for v in found] == [("job-fits-pools", Level.ADVISORY)]
    assert found[0].found.startswith("whether a pod requesting cpu=1, memory=1Gi, gpus=0 fits")
    assert "pool cpu: ecs.zz9.huge" in found[0].found and "instancetypes.py" in found[0].fix


def test_headroom_is_the_boundary() -> None:
    """At exactly a node less headroom a pod fits; a hundredth of a vCPU more does not; two pods
    of which one node holds one need two nodes."""
    from tests.policy.test_rules import ACK, CONTAINER

    pool = dataclasses.replace(CPU_POOL, max_size=1)  # 8 vCPU, 32Gi
    ctx = dataclasses.replace(ACK, node_pools=(pool,), quotas={})
    room_cpu = 8 * (1 - NODE_HEADROOM)
    room_memory = int(32 * GIB * (1 - NODE_HEADROOM))

    def sized(cpu: float, memory: int, replicas: int = 1) -> Any:
        def edit(p: dict[str, Any]) -> None:
            del p["spec"]["pytorchReplicaSpecs"]["Master"]
            worker = p["spec"]["pytorchReplicaSpecs"]["Worker"]
            worker["replicas"] = replicas
            pod = worker["template"]["spec"]
            pod["tolerations"] = []
            amounts = {"cpu": f"{cpu:g}", "memory": str(memory)}
            pod["containers"] = [
                {**CONTAINER, "resources": {"requests": amounts, "limits": amounts}}
            ]

        return job(edit)

    def check(resource: Any) -> list[tuple[str, str]]:
        rules = [RuleSetting(r, r.level, dict(r.defaults)) for r in RULES if r.id in FIT_RULES]
        return [(v.rule, v.found) for v in evaluate([resource], ctx, rules)]

    assert check(sized(room_cpu, room_memory)) == []
    ((rule, found),) = check(sized(room_cpu + 0.01, GIB))
    assert rule == "pod-fits-node-pool" and "cpu 6.81 > 6.8" in found
    assert check(sized(4, 4 * GIB, replicas=2)) == [  # 2 x 4 > 6.8: two nodes
        (
            "job-fits-pools",
            "Worker need 2 nodes of pools cpu, whose maxSize allow 1: the pods past them stay "
            "Pending while the others start and wait for them (no gang scheduler: fine only for "
            "a job written to run with fewer replicas)",
        )
    ]
    # kubeconfig mode exports no pools: neither rule judges nodes there
    many = evaluate([sized(4, 4 * GIB, replicas=50)], LOCAL, settings({}, "x"))
    assert [v for v in many if v.rule in FIT_RULES] == []


def test_within_the_quota_passes(tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]) -> None:
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: vision}",
        "    master: {replicas: 1, cpu: 1, memory: 2Gi}\n"
        "    worker: {replicas: 2, cpu: 1, memory: 2Gi}\n",
    )
    assert fit(run, "local", outputs) == []


def test_a_run_needs_a_team_where_there_are_several(tmp_path: Path) -> None:
    """Which team's quota and defaults a run counts against is the run's namespace, decided once
    (infra/run/options.run_namespace) for plan, policy and deploy."""
    run = write_run(tmp_path, "mnist-ddp", "{purpose: x}", "    master: {cpu: 1}\n")
    with pytest.raises(ConfigError, match="names no team"):
        plan_run(run, "local", REPO)
    tagged = write_run(tmp_path, "mnist-ddp", "{team: vision}", "    master: {cpu: 1}\n", name="r2")
    (job_,) = [
        r for r in plan_run(tagged, "local", REPO).resources if r.type.endswith("PyTorchJob")
    ]
    assert job_.inputs["metadata"]["namespace"] == "vision"


def test_spec_namespace_comes_before_the_team_tag(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    run = write_run(
        tmp_path, "mnist-ddp", "{team: vision}", "    master: {cpu: 1}\n", "  namespace: nlp\n"
    )
    (job_,) = [r for r in plan_run(run, "local", REPO).resources if r.type.endswith("PyTorchJob")]
    assert job_.inputs["metadata"]["namespace"] == "nlp"
    ctx = build_context("local", {}, outputs["local"])
    assert ctx.team_of("nlp") == "nlp"


def test_the_platform_exports_what_the_fit_rules_read(
    outputs: Mapping[str, Mapping[str, Any]],
) -> None:
    """maxSize per pool, the teams' LimitRange defaults and the gang scheduler, read into the
    Context, and through its JSON (what the CrossGuard pack reads) unchanged."""
    ack = build_context("ack-dev", {}, outputs["ack-dev"])
    assert ack.node_pools is not None
    sizes = {p.name: p.max_size for p in ack.node_pools}
    assert sizes == {"system": 2, "cpu": 5, "a10": 4, "v100": 2, "spot": 8}
    (cpu,) = [p for p in ack.node_pools if p.name == "cpu"]
    assert (cpu.cpu, cpu.memory, cpu.instance_types) == (
        8,
        32 * GIB,
        ("ecs.g7.2xlarge", "ecs.g6.2xlarge"),
    )
    assert ack.gang_scheduler == "kube-coscheduler"
    defaults = ack.team_defaults["nlp"]
    assert (defaults.cpu, defaults.memory, defaults.limit_cpu, defaults.limit_memory) == (
        0.5,
        GIB,
        2,
        4 * GIB,
    )
    local = build_context("local", {}, outputs["local"])
    assert local.gang_scheduler is None and set(local.team_defaults) == {"vision", "nlp"}
    for ctx in (ack, local):
        assert Context.from_json(ctx.to_json()) == ctx


def test_the_crossguard_pack_reports_the_same_fit_violations(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """The pack reads the Context as JSON: maxSize, the gang scheduler and the teams' defaults
    must survive it, or the pack and `policy check` would disagree on these runs."""
    from tests.policy.test_check import crossguard
    from trainstack.policy.check import context_for

    ctx, _ = context_for("ack-dev", outputs["ack-dev"], REPO)
    runs = {
        "pools": "    master: {replicas: 1, cpu: 6, memory: 8Gi}\n"
        "    worker: {replicas: 5, cpu: 6, memory: 8Gi}\n",
        "shm": "    master: {replicas: 1, cpu: 2, gpu: 1, sharedMemory: 8Gi}\n",
    }
    compared = 0
    for name, resources in runs.items():
        path = write_run(tmp_path, "mnist-ddp", "{team: nlp}", resources, name=name)
        plan = plan_run(path, "ack-dev", REPO)
        offline = {
            (v.rule, v.resource, f"{v.field}: {v.found}. fix: {v.fix}")
            for v in check_plan(plan, "ack-dev", str(path), outputs["ack-dev"], REPO).violations
        }
        assert {rule for rule, _, _ in offline} & set(FIT_RULES)
        assert crossguard([r for r in plan.resources if r.op == "create"], ctx, plan.project) == (
            offline
        )
        compared += len(offline)
    assert compared >= 2
