"""``trainstack policy check`` end to end on ack-dev: real specs, the real plan under mocks, the
real CLI in a subprocess; and the CrossGuard pack's validate functions on the same resources."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clirunner import Cli, Result
from trainstack.policy.model import Context

REPO = Path(__file__).resolve().parents[2]
REGISTRY = "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com"
GOOD_IMAGE = f"{REGISTRY}/acme/torch:2.3"
BUCKET = "acme-trainstack-dev-data"


def make_run(
    folder: Path, name: str, *, image: str = GOOD_IMAGE, bucket: str = BUCKET, cpu: int = 4
) -> Path:
    """A copy of mnist-ddp with ``image`` and one run of it for team vision on ack-dev."""
    component = folder / name
    shutil.copytree(
        REPO / "components" / "mnist-ddp", component, ignore=shutil.ignore_patterns("runs")
    )
    spec = yaml.safe_load((component / "component.yaml").read_text())
    spec["spec"]["image"] = image
    (component / "component.yaml").write_text(yaml.safe_dump(spec))
    (component / "runs").mkdir()
    run = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": name, "tags": {"team": "vision"}},
        "spec": {
            "component": "../component.yaml",
            "inputs": {"train": f"oss://{bucket}/vision/mnist/"},
            "outputs": {
                "model": "oss://acme-trainstack-dev-models/vision/mnist/",
                "checkpoints": "oss://acme-trainstack-dev-checkpoints/vision/mnist/",
            },
            "resources": {
                "master": {"replicas": 1, "cpu": cpu, "memory": "16Gi", "gpu": 1},
                "worker": {"replicas": 1, "cpu": 4, "memory": "16Gi", "gpu": 1},
            },
            "priority": 5,
        },
    }
    path = component / "runs" / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    return path


def policy_cli(*args: str, project: Path = REPO) -> Result:
    return Cli()("policy", "check", *args, "--project", project, cwd=project, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {
        "good": make_run(root, "good-run"),
        "hub": make_run(root, "hub-run", image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"),
        "big": make_run(root, "big-run", cpu=32),
        "bucket": make_run(root, "bucket-run", bucket="someone-elses-bucket"),
    }


def test_the_done_when_cases_exit_1_naming_rule_resource_field_and_fix(
    runs: dict[str, Path],
) -> None:
    done = policy_cli(
        str(runs["hub"]),
        str(runs["big"]),
        str(runs["bucket"]),
        "--env",
        "ack-dev",
        "--format",
        "json",
    )
    assert done.returncode == 1, done.stderr
    reports = {
        Path(r["target"]).parent.parent.name: r["violations"] for r in json.loads(done.stdout)
    }
    rules = {name: {v["rule"] for v in vs} for name, vs in reports.items()}
    assert rules == {
        "hub-run": {"allowed-registries"},
        "big-run": {"pod-fits-node-pool"},
        "bucket-run": {"platform-storage"},
    }
    hub = reports["hub-run"][0]
    assert hub["resource"] == (
        "kubernetes:training.kubedl.io/v1alpha1:PyTorchJob::pytorchjob-hub-run"
    )
    assert hub["field"].endswith(".image") and "Docker Hub" in hub["found"]
    assert REGISTRY in hub["fix"]
    big = reports["big-run"][0]
    assert big["field"] == "spec.pytorchReplicaSpecs.Master.template.spec"
    assert "cpu=32" in big["found"] and "a10: cpu 32 > 6.8" in big["found"]
    bucket = reports["bucket-run"][0]
    assert bucket["field"] == "spec.csi.volumeAttributes.bucket"
    assert "'someone-elses-bucket'" in bucket["found"]


def test_a_run_that_fits_passes_and_github_format_annotates(runs: dict[str, Path]) -> None:
    good = policy_cli(str(runs["good"]), "--env", "ack-dev")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "no violations" in good.stdout
    bad = policy_cli(str(runs["bucket"]), "--env", "ack-dev", "--format", "github")
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"::error file={runs['bucket']},title=platform-storage::")


def test_advisory_rules_print_and_exit_0(runs: dict[str, Path], tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", project)
    shutil.copytree(REPO / "platform", project / "platform")
    config = yaml.safe_load((REPO / "Pulumi.ack-dev.yaml").read_text())
    config["config"]["policy:rules"] = {"platform-storage": {"level": "advisory"}}
    (project / "Pulumi.ack-dev.yaml").write_text(yaml.safe_dump(config))
    done = policy_cli(str(runs["bucket"]), "--env", "ack-dev", project=project)
    assert done.returncode == 0, done.stderr
    assert "[advisory] platform-storage" in done.stdout


def test_plan_shows_the_violations(runs: dict[str, Path]) -> None:
    done = Cli()("plan", runs["hub"], "--env", "ack-dev", "--project", REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    table, _, policy = done.stdout.partition("policy: ")
    assert "pytorchjob-hub-run" in table
    # one Docker Hub image in the init and main containers of both roles: one violation, which
    # says how many containers share it (not one per container)
    assert "1 violation(s), 1 mandatory" in policy
    assert "(and 3 more containers)" in policy
    assert "[mandatory] allowed-registries" in policy
    assert "Docker Hub" in policy


def test_the_platforms_of_both_environments_pass() -> None:
    for env in ("ack-dev", "local"):
        done = policy_cli("--env", env)
        assert done.returncode == 0, done.stdout + done.stderr


# --- the CrossGuard pack agrees -----------------------------------------------------------------


def crossguard(resources: list[Any], ctx: Context, project: str) -> set[tuple[str, str, str]]:
    """Every resource through every policy's validate function, as CrossGuard would call it."""
    from pulumi_policy.policy import (
        PolicyCustomTimeouts,
        PolicyResourceOptions,
        ResourceValidationArgs,
    )

    from trainstack.policy.crossguard import policies

    reported: set[tuple[str, str, str]] = set()
    context = ctx.to_json()  # the pack's config, as `policy check` hands it over: serialized once
    for policy in policies():
        for r in resources:
            opts = PolicyResourceOptions(
                r.protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], r.parent
            )
            urn = f"urn:pulumi:{ctx.env}::{project}::{r.type}::{r.name}"
            args = ResourceValidationArgs(
                r.type, r.inputs, urn, r.name, opts, None, {"context": context}
            )

            def report(
                message: str, urn: str | None = None, *, _r: Any = r, _p: Any = policy
            ) -> None:
                reported.add((_p.name, f"{_r.type}::{_r.name}", message))

            assert policy.validate(args, report) is None
    return reported


def test_crossguard_and_the_offline_check_report_the_same_violations(runs: dict[str, Path]) -> None:
    from trainstack.envfile import find_project
    from trainstack.plan import service
    from trainstack.policy.check import check_plan, context_for

    outputs, _ = service.platform_outputs(find_project(REPO), "ack-dev")
    ctx, _ = context_for("ack-dev", outputs, REPO)
    total = 0
    for path in runs.values():
        plan = service.plan_run(path, "ack-dev", REPO)
        offline = {
            (v.rule, v.resource, f"{v.field}: {v.found}. fix: {v.fix}")
            for v in check_plan(plan, "ack-dev", str(path), outputs, REPO).violations
        }
        assert (
            crossguard([r for r in plan.resources if r.op == "create"], ctx, plan.project)
            == offline
        )
        total += len(offline)
    assert total >= 3  # the three bad runs were really compared, not three empty sets
    platform = service.plan_platform("ack-dev", REPO)
    assert (
        crossguard([r for r in platform.resources if r.op == "create"], ctx, platform.project)
        == set()
    )
    # a platform bucket stripped of its protection: both entry points flag it, and only it
    bucket = replace(
        next(r for r in platform.resources if r.type == "alicloud:oss/bucket:Bucket"), protect=False
    )
    platform.resources = [bucket]
    offline = {
        (v.rule, v.resource, f"{v.field}: {v.found}. fix: {v.fix}")
        for v in check_plan(platform, "ack-dev", "platform", outputs, REPO).violations
    }
    assert crossguard([bucket], ctx, platform.project) == offline
    assert {(rule, res) for rule, res, _ in offline} == {
        ("stateful-protected", f"{bucket.type}::{bucket.name}")
    }


def test_the_context_cli_is_what_the_pack_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.policy.crossguard import load_context

    done = Cli()("policy", "context", "--env", "ack-dev", "--project", REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "context.json"
    path.write_text(done.stdout)
    monkeypatch.setenv("TRAINSTACK_POLICY_CONTEXT", str(path))
    ctx = load_context({})
    assert ctx is not None and ctx.registry == REGISTRY and ctx.node_pools
    assert {p.name for p in ctx.node_pools} >= {"a10", "cpu", "system"}
