"""Every shipped run plans cleanly on the environment it is written for (its
``env`` tag), fits that environment's nodes and quota with headroom, binds the platform's own
buckets and images, and runs that name no environment are local-only (``file://``, for
``trainstack run --local``). ``trainstack init``'s run plans on the shipped ``local`` environment.

At 29fa4ef 15 of the 18 (run x environment) plans failed: teams no environment has, no team where
an environment has several, pods larger than the nodes, buckets the jobs role may not touch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spec.clirun import trainstack
from trainstack.envfile import find_project
from trainstack.plan.service import plan_run, platform_outputs
from trainstack.platformnames import ENV_TAG, PV_NAMESPACE_SEPARATOR
from trainstack.policy.check import check_plan, context_for
from trainstack.spec import load_run

REPO = Path(__file__).resolve().parents[2]
RUN_FILES = sorted(REPO.glob("components/*/runs/*.yaml"))
SHIPPED_ENVS = ("local", "ack-dev")
# The one fit check (docs/policies.md): each pod on a node of a pool, all of them within the
# pools' maxSize, the team's quota.
FIT_RULES = {"pod-fits-node-pool", "job-fits-pools", "team-quota"}


def _id(path: Path) -> str:
    return f"{path.parents[1].name}/{path.name}"


def _targeted() -> list[tuple[Path, str]]:
    out = []
    for path in RUN_FILES:
        env = load_run(path).tags.get(ENV_TAG)
        if env is not None:
            out.append((path, env))
    return out


TARGETED = _targeted()


def _sweep_bases() -> set[Path]:
    """The run files the shipped sweeps start from (their `spec.run` when it is a path)."""
    import yaml

    bases = set()
    for sweep in REPO.glob("components/*/sweeps/*.yaml"):
        ref = yaml.safe_load(sweep.read_text())["spec"]["run"]
        if isinstance(ref, str):
            bases.add((sweep.parent / ref).resolve())
    return bases


def test_every_run_names_a_shipped_environment_or_is_local_only() -> None:
    assert RUN_FILES
    for path in RUN_FILES:
        run = load_run(path)
        env = run.tags.get(ENV_TAG)
        if env is not None:
            assert env in SHIPPED_ENVS, (path, env)
            continue
        # Local-only: all its data is files it ships (trainstack run --local), no cloud binding;
        # or a sweep's base run, whose trials run locally (their outputs stay in each run).
        bindings = [*run.inputs.values(), *run.outputs.values()]
        assert all(b.uri.startswith("file://") for b in bindings), path
        if path.resolve() in _sweep_bases():
            continue
        assert bindings, f"{path} names no environment and binds nothing"
        assert path.name.startswith("local"), path
    # each cluster example has a run for a cluster
    assert {p.parents[1].name for p, _ in TARGETED} == {
        p.parent.name for p in REPO.glob("components/*/component.yaml")
    }


@pytest.mark.parametrize(("run_file", "env"), TARGETED, ids=[_id(p) for p, _ in TARGETED])
def test_the_run_plans_and_fits_on_its_environment(run_file: Path, env: str) -> None:
    plan = plan_run(run_file, env, REPO)  # what `trainstack plan RUN --env ENV` runs
    run = load_run(run_file)
    outputs, _ = platform_outputs(find_project(REPO), env)
    jobs = [
        r
        for r in plan.resources
        if r.type.startswith(("kubernetes:training.kubedl.io", "kubernetes:inference.kubedl.io"))
    ]
    assert len(jobs) == 1, [r.type for r in plan.resources]
    ctx, _ = context_for(env, outputs, REPO)
    namespace = jobs[0].inputs["metadata"]["namespace"]
    team = ctx.team_of(namespace)
    assert team is not None, f"{run_file}: tags.team names no team of {env}"
    assert run.tags.get("team") in (None, team) and run.namespace in (None, namespace)
    # the team's PV guard (teamaccess.py) admits only PVs named after its namespace, pre-bound
    # to a claim in it
    for pv in (r for r in plan.resources if r.type == "kubernetes:core/v1:PersistentVolume"):
        prefix = namespace + PV_NAMESPACE_SEPARATOR
        assert pv.inputs["metadata"]["name"].startswith(prefix), pv.inputs["metadata"]
        assert pv.inputs["spec"]["claimRef"]["namespace"] == namespace
    # advisory findings too: a shipped example fits outright
    report = check_plan(plan, env, str(run_file), outputs, REPO)
    assert [v.message for v in report.violations if v.rule in FIT_RULES] == []
    if run.priority is not None:
        assert run.priority <= outputs["teamMaxPriority"][team]
    image = run.component.image
    assert not image.endswith(":latest") and (":" in image.rsplit("/", 1)[-1] or "@" in image)
    if ctx.mode == "ack":
        # the platform's registry, and buckets the jobs role may use
        assert image.startswith(f"{outputs['registry']}/{outputs['registryNamespace']}/"), image
        buckets = set(outputs["buckets"].values())
        for binding in [*run.inputs.values(), *run.outputs.values()]:
            scheme, _, rest = binding.uri.partition("://")
            assert scheme == "oss", (run_file, binding.uri)  # NAS servers are known after apply
            assert rest.split("/")[0] in buckets, (run_file, binding.uri)


def test_the_readme_job_plans_on_both_shipped_environments() -> None:
    """Every output of README's main job and its $METRICS mount a claim (the artifact store:
    pvc://trainstack-artifacts on local, an OSS PV/PVC on ack-dev), never an emptyDir."""
    run_file = REPO / "components/mnist-ddp/runs/local.yaml"
    run = load_run(run_file)
    paths = {f"/ml/output/{o.name}" for o in run.component.outputs} | {"/ml/metrics"}
    assert len(paths) == 3  # model, checkpoints, metrics
    for env in SHIPPED_ENVS:
        plan = plan_run(run_file, env, REPO)
        (job,) = [r for r in plan.resources if r.type.endswith(":PyTorchJob")]
        specs: dict[str, Any] = job.inputs["spec"]["pytorchReplicaSpecs"]
        claims = {
            r.inputs["metadata"]["name"]
            for r in plan.resources
            if r.type == "kubernetes:core/v1:PersistentVolumeClaim"
        }
        for spec in specs.values():
            pod = spec["template"]["spec"]
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
            for path in paths:
                claim = volumes[mounts[path]["name"]]["persistentVolumeClaim"]["claimName"]
                # the platform's claim (local) or one the run stack creates (ack-dev)
                assert claim == "trainstack-artifacts" or claim in claims, (env, path, claim)


def test_init_scaffolds_a_run_that_plans_on_the_local_environment(tmp_path: Path) -> None:
    made = trainstack("init", "demo", "--dir", tmp_path)
    assert made.code == 0, made.err
    run_file = tmp_path / "demo" / "runs" / "example.yaml"
    result = trainstack("plan", run_file, "--env", "local", "--project", REPO, "--json")
    assert result.code == 0, result.err + result.out
    assert '"namespace": "vision"' in result.out


def test_an_init_run_made_in_the_project_passes_the_local_environments_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scaffold named a Docker Hub image, which `local`'s allowed-registries
    refuses (four times over). Made inside the platform project, it names the image mirrored into
    that environment's registry, and says how to push it there."""
    monkeypatch.setenv("TRAINSTACK_PROJECT", str(REPO))
    made = trainstack("init", "demo", "--dir", tmp_path)
    assert made.code == 0, made.err
    component = (tmp_path / "demo" / "component.yaml").read_text()
    image = "registry.example.com/trainstack/pytorch:2.3.1-cuda12.1-cudnn8-runtime"
    assert f"image: {image}" in component
    assert f"docker tag pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime {image}" in component
    run_file = tmp_path / "demo" / "runs" / "example.yaml"
    checked = trainstack("policy", "check", run_file, "--env", "local", "--project", REPO)
    assert checked.code == 0, checked.out + checked.err
