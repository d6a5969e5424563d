"""trainstack.infra.fit: pod requests against the environment's node pools (with headroom) and
the team's quota. The runs the issue names (census single-gpu 8 vCPU/30 Gi on an 8 vCPU/30 GiB
node, cifar 4 GPUs per pod on 1-GPU nodes) are refused; the shipped ones fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainstack.infra.fit import (
    GIB,
    HEADROOM,
    INSTANCE_TYPES,
    Capacity,
    PodRequest,
    load_environment,
    node_misfits,
    pod_misfits,
    quota_misfits,
    run_misfits,
    smallest,
    team_of,
)
from trainstack.infra.platform.config import PlatformConfig
from trainstack.infra.platform.config_ack import PoolConfig
from trainstack.spec import load_run
from trainstack.spec.model import Run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ack_dev() -> PlatformConfig:
    return load_environment(REPO, "ack-dev")


@pytest.fixture(scope="module")
def local() -> PlatformConfig:
    return load_environment(REPO, "local")


def write_run(tmp_path: Path, component: str, tags: str, resources: str, extra: str = "") -> Run:
    path = tmp_path / "run.yaml"
    path.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\n"
        f"metadata: {{name: r1, tags: {tags}}}\n"
        f"spec:\n  component: {REPO / 'components' / component / 'component.yaml'}\n"
        f"  resources:\n{resources}{extra}"
    )
    return load_run(path)


def messages(run: Run, cfg: PlatformConfig) -> list[str]:
    team = team_of(run, cfg)
    assert team is not None
    return [m.render() for m in run_misfits(run, cfg, team)]


def test_the_issues_census_single_gpu_does_not_fit_an_a10_node(
    tmp_path: Path, ack_dev: PlatformConfig
) -> None:
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 8, memory: 30Gi, gpu: 1}\n",
    )
    (problem,) = messages(run, ack_dev)
    assert problem.startswith(
        "master: 8 vCPU, 30.0 GiB, 1 GPU per pod does not fit any GPU pool "
        "with 15% headroom (a10: 6.80 vCPU, 25.5 GiB, 1 GPU, v100: "
    )


def test_four_gpus_per_pod_do_not_fit_one_gpu_nodes(
    tmp_path: Path, ack_dev: PlatformConfig
) -> None:
    run = write_run(
        tmp_path,
        "cifar-horovod",
        "{team: vision}",
        "    launcher: {replicas: 1, cpu: 6, memory: 24Gi, gpu: 4}\n"
        "    worker: {replicas: 1, cpu: 6, memory: 24Gi, gpu: 4}\n",
        '  inputs: {data: {uri: "oss://acme-bucket/train.npz", type: file}}\n',
    )
    found = messages(run, ack_dev)
    assert len(found) == 2 and all("does not fit any GPU pool" in m for m in found)


def test_cpu_spot_has_no_pool_on_ack_dev(tmp_path: Path, ack_dev: PlatformConfig) -> None:
    """ack-dev's spot pool holds GPUs (tainted as such): a CPU spot pod has nowhere to go."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {cpu: 4, memory: 8Gi}\n",
        "  spot: true\n",
    )
    assert messages(run, ack_dev) == ["master: the environment has no spot CPU pool for it"]


def test_more_pods_than_the_pools_max_size(tmp_path: Path, ack_dev: PlatformConfig) -> None:
    # one 6-vCPU pod per 8-vCPU node; the CPU pool has at most 5 nodes
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 6, memory: 8Gi}\n"
        "    worker: {replicas: 5, cpu: 6, memory: 8Gi}\n",
    )
    assert messages(run, ack_dev) == [
        "master, worker need 6 nodes of pools cpu, whose maxSize allow 5"
    ]


def test_the_teams_quota_and_pod_count(tmp_path: Path, local: PlatformConfig) -> None:
    # local: team nlp has 16 CPUs, 64Gi, no GPU, 50 pods; kubeconfig mode has no pools
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1, cpu: 1, memory: 1Gi, gpu: 1}\n"
        "    worker: {replicas: 60, cpu: 0.25, memory: 512Mi}\n",
    )
    assert messages(run, local) == [
        "the run asks for 16 vCPU, 31.0 GiB, 1 GPU in all, more than team 'nlp''s quota "
        "(16 vCPU, 64.0 GiB)",
        "61 pods, more than team 'nlp''s quota of 50",
    ]


def test_roles_without_requests_get_the_teams_defaults(
    tmp_path: Path, local: PlatformConfig
) -> None:
    # LimitRange default 500m/1Gi: 40 pods ask for 20 CPUs, above nlp's 16
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {replicas: 1}\n    worker: {replicas: 39}\n",
    )
    assert messages(run, local)[0].startswith("the run asks for 20 vCPU, 40.0 GiB in all")


def test_shared_memory_is_charged_to_the_pods_memory() -> None:
    pod = PodRequest("worker", 1, Capacity(2, 4 * GIB, 1), spot=False, shared_memory=8 * GIB)
    pool = PoolConfig(
        name="a10", instance_types=("ecs.gn7i-c8g1.2xlarge",), min_size=0, max_size=2, gpu=True
    )
    assert [m.render() for m in pod_misfits(pod, [pool])] == [
        "worker: sharedMemory 8.0 GiB is more than its memory 4.0 GiB, which /dev/shm is charged to"
    ]


def test_a_pool_is_as_small_as_its_smallest_type_and_unknown_types_are_named() -> None:
    mixed = PoolConfig(
        name="cpu",
        instance_types=("ecs.g7.4xlarge", "ecs.g7.2xlarge"),
        min_size=0,
        max_size=3,
        gpu=False,
    )
    assert smallest(mixed) == INSTANCE_TYPES["ecs.g7.2xlarge"]
    odd = PoolConfig(
        name="odd", instance_types=("ecs.zz9.huge",), min_size=0, max_size=3, gpu=False
    )
    pod = PodRequest("worker", 1, Capacity(1, GIB), spot=False)
    assert [m.render() for m in pod_misfits(pod, [odd])] == [
        "worker: pool 'odd': instance types ecs.zz9.huge are not in "
        "trainstack.infra.fit.INSTANCE_TYPES",
        "worker: 1 vCPU, 1.0 GiB per pod does not fit any CPU pool with 15% headroom ()",
    ]


def test_headroom_is_the_boundary() -> None:
    pool = PoolConfig(
        name="cpu", instance_types=("ecs.g7.2xlarge",), min_size=0, max_size=1, gpu=False
    )
    at = PodRequest("w", 1, Capacity(8 * (1 - HEADROOM), 32 * GIB * (1 - HEADROOM)), spot=False)
    over = PodRequest("w", 1, Capacity(8 * (1 - HEADROOM) + 0.01, GIB), spot=False)
    assert pod_misfits(at, [pool]) == [] and node_misfits([at], [pool]) == []
    assert pod_misfits(over, [pool])
    two = PodRequest("w", 2, Capacity(4, 4 * GIB), spot=False)  # 2 x 4 > 6.8: two nodes
    assert (
        node_misfits([two], [pool])[0].render() == "w need 2 nodes of pools cpu, whose "
        "maxSize allow 1"
    )


def test_quota_misfits_is_empty_within_the_quota(local: PlatformConfig) -> None:
    (vision,) = [t for t in local.teams if t.name == "vision"]
    pods = [
        PodRequest("master", 1, Capacity(1, 2 * GIB), spot=False),
        PodRequest("worker", 2, Capacity(1, 2 * GIB), spot=False),
    ]
    assert quota_misfits(pods, vision) == []


def test_team_of_needs_a_team_where_there_are_several(
    tmp_path: Path, local: PlatformConfig
) -> None:
    run = write_run(tmp_path, "mnist-ddp", "{purpose: x}", "    master: {cpu: 1}\n")
    assert team_of(run, local) is None
    tagged = write_run(tmp_path, "mnist-ddp", "{team: vision}", "    master: {cpu: 1}\n")
    team = team_of(tagged, local)
    assert team is not None and team.name == "vision"


def test_team_of_follows_spec_namespace_first(tmp_path: Path, local: PlatformConfig) -> None:
    run = write_run(
        tmp_path, "mnist-ddp", "{team: vision}", "    master: {cpu: 1}\n", "  namespace: nlp\n"
    )
    team = team_of(run, local)
    assert team is not None and team.name == "nlp"
