"""The run program under mocks: a provider from the platform's outputs and exactly the objects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from trainstack.errors import UserError

PLATFORM = "organization/trainstack/local"
KUBECONFIG = "apiVersion: v1\nkind: Config\n# platform kubeconfig\n"
CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "mnist-baseline-01-config",
        "namespace": "vision",
        "labels": {"trainstack.dev/run": "mnist-baseline-01"},
    },
    "data": {
        "hyperparameters.json": '{"epochs": 3}',
        "training_job.json": '{"name": "mnist-baseline-01"}',
    },
}
JOB = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "PyTorchJob",
    "metadata": {"name": "mnist-baseline-01", "namespace": "vision"},
    "spec": {
        "cleanPodPolicy": "None",
        "schedulingPolicy": {"priorityClassName": "trainstack-priority-5"},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "ExitCode",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "torch:2.3",
                                "resources": {"limits": {"nvidia.com/gpu": 1}},
                            }
                        ]
                    }
                },
            }
        },
    },
}


class Run:
    name = "mnist-baseline-01"


def build(
    mocks: Any, manifests: list[dict[str, Any]], kubeconfig: str = KUBECONFIG, context: str = ""
) -> dict[str, Any]:
    from trainstack.infra.run.program import build_run

    mocks.stack_outputs[PLATFORM] = {"kubeconfig": kubeconfig, "kubeContext": context}
    return mocks.run(lambda: build_run(Run(), manifests, PLATFORM))  # type: ignore[no-any-return]


def hashed(job: dict[str, Any], manifests: list[dict[str, Any]], rerun: str = "") -> dict[str, Any]:
    """``job`` as the run program registers it: annotated with the digest of the run's objects."""
    from trainstack.infra.run.program import manifest_hash
    from trainstack.platformnames import SPEC_HASH_ANNOTATION

    meta = job["metadata"]
    annotations = {
        **meta.get("annotations", {}),
        SPEC_HASH_ANNOTATION: manifest_hash(manifests, rerun),
    }
    return {**job, "metadata": {**meta, "annotations": annotations}}


def test_registers_exactly_the_rendered_objects(mocks: Any) -> None:
    manifests = [copy.deepcopy(CONFIGMAP), copy.deepcopy(JOB)]
    build(mocks, manifests)
    job = mocks.one(
        "kubernetes:training.kubedl.io/v1alpha1:PyTorchJob", "pytorchjob-mnist-baseline-01"
    )
    # every field, unchanged (1 == 1.0: numbers arrive as floats), plus the digest annotation
    assert job == hashed(JOB, manifests)
    cm = mocks.one("kubernetes:core/v1:ConfigMap", "configmap-mnist-baseline-01-config")
    assert cm == CONFIGMAP
    kinds = sorted(r.typ for r in mocks.resources)
    assert kinds == [
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:training.kubedl.io/v1alpha1:PyTorchJob",
        "pulumi:providers:kubernetes",
        "pulumi:pulumi:StackReference",
    ]
    assert manifests == [CONFIGMAP, JOB], "the rendered objects must not be modified"


def test_provider_comes_from_the_platform_kubeconfig_kept_secret(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    build(mocks, [JOB])
    (ref,) = mocks.of_type("pulumi:pulumi:StackReference")
    assert ref.inputs["name"] == PLATFORM
    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    assert is_rpc_secret(provider.inputs["kubeconfig"])
    assert unwrap_rpc_secret(provider.inputs["kubeconfig"]) == KUBECONFIG
    job = mocks.of_type("kubernetes:training.kubedl.io/v1alpha1:PyTorchJob")[0]
    assert job.provider is not None and "::k8s::" in job.provider


def test_ambient_cluster_when_the_platform_gives_no_kubeconfig(mocks: Any) -> None:
    from pulumi.runtime.rpc import unwrap_rpc_secret

    build(mocks, [JOB], kubeconfig="", context="kind-trainstack")
    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    # Still marked secret (it came from a secret output), but empty: the provider falls back to
    # $KUBECONFIG / ~/.kube/config with the platform's context.
    assert unwrap_rpc_secret(provider.inputs["kubeconfig"]) is None
    assert provider.inputs["context"] == "kind-trainstack"


def test_exports_job_name_namespace_and_kind(mocks: Any) -> None:
    from trainstack.infra.run.program import build_run

    mocks.stack_outputs[PLATFORM] = {"kubeconfig": KUBECONFIG, "kubeContext": ""}

    @pulumi.runtime.test
    def check() -> pulumi.Output[None]:
        outputs = build_run(Run(), [CONFIGMAP, JOB], PLATFORM)

        def verify(args: list[Any]) -> None:
            name, namespace, kind, resources = args
            assert (name, namespace, kind) == ("mnist-baseline-01", "vision", "PyTorchJob")
            assert resources == [
                "ConfigMap/mnist-baseline-01-config",
                "PyTorchJob/mnist-baseline-01",
            ]

        return pulumi.Output.all(
            outputs["jobName"], outputs["namespace"], outputs["kind"], outputs["resources"]
        ).apply(verify)

    check()


@pytest.mark.parametrize(
    ("manifests", "needle"),
    [
        ([CONFIGMAP], "exactly one job, got 0"),
        ([JOB, JOB], "exactly one job, got 2"),
        (
            [JOB, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}],
            "cannot deploy a Pod (v1) yet",
        ),
        ([{**JOB, "extra": {}}], "top-level fields extra cannot be deployed"),
    ],
)
def test_unsupported_renders_are_clear_errors(
    mocks: Any, manifests: list[dict[str, Any]], needle: str
) -> None:
    with pytest.raises(UserError) as caught:
        build(mocks, manifests)
    assert needle in caught.value.message


RUN_FILE = Path(__file__).resolve().parents[2] / "components/mnist-ddp/runs/baseline.yaml"


def token(manifest: dict[str, Any]) -> str:
    api, kind = manifest["apiVersion"], manifest["kind"]
    return f"kubernetes:core/{api}:{kind}" if api == "v1" else f"kubernetes:{api}:{kind}"


def test_each_resource_equals_the_rendered_manifest(mocks: Any) -> None:
    from trainstack.infra.run.program import build_run, resource_name
    from trainstack.render import RenderOptions, render_run
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    manifests = render_run(run, options=RenderOptions(namespace="vision", local_cluster=True))
    rendered = copy.deepcopy(manifests)
    mocks.stack_outputs[PLATFORM] = {"kubeconfig": KUBECONFIG, "kubeContext": ""}
    mocks.run(lambda: build_run(run, manifests, PLATFORM))
    job = next(m for m in manifests if m["kind"] == "PyTorchJob")
    # The run's custom resource is the rendered manifest, field for field.
    assert mocks.one(token(job), resource_name(job)) == hashed(job, manifests)
    for manifest in manifests:
        if manifest is not job:
            assert mocks.one(token(manifest), resource_name(manifest)) == manifest
    registered = [r for r in mocks.resources if r.typ.startswith("kubernetes:")]
    assert len(registered) == len(manifests), "nothing more, nothing less"
    assert manifests == rendered


def test_render_options_follow_the_platform(mocks: Any) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)  # tags.team: vision
    local = render_options(
        {
            "mode": "kubeconfig",
            "namespaces": {"vision": "team-vision"},
            "pullSecretName": "trainstack-registry",
            "ossAuth": {"type": "secret", "secretName": "trainstack-oss"},
        },
        run,
        "local",
    )
    assert (local.namespace, local.local_cluster) == ("team-vision", True)
    assert (local.oss_secret, local.oss_ram_role) == ("trainstack-oss", None)
    ack = render_options(
        {
            "mode": "ack",
            "region": "cn-beijing",
            "jobsRole": "jobs",
            "namespaces": {"vision": "vision", "nlp": "nlp"},
            "pullSecretName": "trainstack-registry",
            "ossAuth": {"type": "rrsa", "roleName": "jobs"},
        },
        run,
        "ack-dev",
    )
    assert (ack.local_cluster, ack.oss_ram_role, ack.oss_secret) == (False, "jobs", None)
    assert ack.oss_endpoint == "oss-cn-beijing-internal.aliyuncs.com"


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        # kubeconfig mode without an AccessKey: no Secret to name, a hint saying how to add one.
        ({"mode": "kubeconfig", "ossAuth": {"type": "none"}}, (None, None, True)),
        # Platforms deployed before the ossAuth output: ack had the role, kubeconfig no Secret.
        ({"mode": "ack", "jobsRole": "jobs"}, (None, "jobs", False)),
        ({"mode": "kubeconfig"}, (None, None, True)),
    ],
)
def test_oss_credentials_are_exactly_what_the_platform_provides(
    outputs: dict[str, Any], expected: tuple[Any, Any, bool]
) -> None:
    from trainstack.infra.run.options import oss_credentials

    secret, role, hint = oss_credentials(outputs, "local")
    assert (secret, role, hint is not None) == expected


def test_an_unreadable_oss_auth_output_is_a_clear_error() -> None:
    from trainstack.errors import ConfigError
    from trainstack.infra.run.options import oss_credentials

    with pytest.raises(ConfigError) as caught:
        oss_credentials({"mode": "ack", "ossAuth": {"type": "sts", "roleName": "jobs"}}, "ack-dev")
    assert "ossAuth output is {'type': 'sts', 'roleName': 'jobs'}" in caught.value.message


def test_a_team_the_environment_lacks_is_a_clear_error(mocks: Any) -> None:
    from trainstack.errors import ConfigError
    from trainstack.infra.run.options import render_options
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    with pytest.raises(ConfigError) as caught:
        render_options(
            {"mode": "kubeconfig", "namespaces": {"visoin": "visoin", "nlp": "nlp"}}, run, "local"
        )
    assert (
        "metadata.tags.team: 'vision' is not a team of environment 'local'" in caught.value.message
    )
    assert caught.value.hint == "did you mean 'visoin'?"


def test_an_mpi_run_deploys_its_launcher_rbac(mocks: Any) -> None:
    """The launcher's ServiceAccount, Role and RoleBinding are deployable, field for field (at
    8f06a63 none was rendered; a Role would have been refused as an unknown custom resource)."""
    from trainstack.infra.run.program import build_run, resource_name
    from trainstack.render import render_run
    from trainstack.spec import load_run

    run = load_run(Path(__file__).parents[1] / "render" / "specs" / "mpi.run.yaml")
    manifests = render_run(run)
    mocks.stack_outputs[PLATFORM] = {"kubeconfig": KUBECONFIG, "kubeContext": ""}
    mocks.run(lambda: build_run(run, manifests, PLATFORM))
    rbac = [m for m in manifests if m["kind"] in {"ServiceAccount", "Role", "RoleBinding"}]
    assert [m["kind"] for m in rbac] == ["ServiceAccount", "Role", "RoleBinding"]
    for manifest in rbac:
        assert mocks.one(token(manifest), resource_name(manifest)) == manifest


def test_team_scoped_credentials_are_preferred_when_the_platform_exports_them(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    from trainstack.infra.run.program import build_run

    scoped = "apiVersion: v1\nkind: Config\n# vision's ServiceAccount token\n"
    mocks.stack_outputs[PLATFORM] = {
        "kubeconfig": KUBECONFIG,
        "kubeContext": "admin",
        "teamKubeconfigs": {"vision": scoped, "nlp": "other"},
    }
    mocks.run(lambda: build_run(Run(), [JOB], PLATFORM))
    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    assert is_rpc_secret(provider.inputs["kubeconfig"])
    assert unwrap_rpc_secret(provider.inputs["kubeconfig"]) == scoped
    assert "context" not in provider.inputs or provider.inputs["context"] is None


def test_without_team_credentials_for_the_namespace_the_admin_kubeconfig_is_used(
    mocks: Any,
) -> None:
    from pulumi.runtime.rpc import unwrap_rpc_secret

    from trainstack.infra.run.program import build_run

    mocks.stack_outputs[PLATFORM] = {
        "kubeconfig": KUBECONFIG,
        "kubeContext": "admin",
        "teamKubeconfigs": {"nlp": "other"},
    }
    mocks.run(lambda: build_run(Run(), [JOB], PLATFORM))
    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    assert unwrap_rpc_secret(provider.inputs["kubeconfig"]) == KUBECONFIG
    assert provider.inputs["context"] == "admin"
