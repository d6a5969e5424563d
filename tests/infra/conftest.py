"""The one Pulumi mocks fixture for tests/infra.

Pulumi's mocks are process-global, so they are set here, per test, and never at module level;
program modules are imported inside tests, after the mocks are set. ``preview=False``: under a
preview, callbacks given to ``apply`` on unknown values never run and their asserts would pass
silently.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pulumi
import pytest
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from trainstack.plan.engine import mock_registrations

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
CRD_FOLDER = "platform/kubedl/v0.5.0"
KUBEDL_DIGEST_IMAGE = (
    "acme-registry-vpc.cn-hangzhou.cr.aliyuncs.com/platform/kubedl@sha256:" + "ab" * 32
)
NODE_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCFakeKeyForTestsOnly ops@acme"
# What a platform team sets before its first `pulumi up` (Pulumi.<env>.yaml's header lists it).
READY: dict[str, dict[str, str]] = {
    "local": {"trainstack:registryPassword": "s3cret-registry-password"},
    "ack-dev": {
        "trainstack:registryPassword": "s3cret-registry-password",
        "trainstack:deployer": '{"uid": "276543210987654", "ramRole": true}',
        "trainstack:apiAllowedCidrs": '["198.51.100.7/32"]',
        "trainstack:nodePublicKey": NODE_KEY,
        "kubedl:image": KUBEDL_DIGEST_IMAGE,
    },
}

# kubeconfig mode's per-team OSS AccessKeys (trainstack:ossAccessKeys), as a program receives them
# after `pulumi config set --secret --path 'trainstack:ossAccessKeys.<team>.id' ...`: one JSON
# value, the whole key secret (Pulumi marks an object secret when any value inside it is).
OSS_TEAM_KEYS = "trainstack:ossAccessKeys"
OSS_ENDPOINT = "oss-cn-beijing.aliyuncs.com"


def oss_key_of(team: str) -> dict[str, str]:
    return {"id": f"LTAI5tKeyIdOf{team.title()}", "secret": f"S3cretOf{team.title()}ForTests0nly"}


def team_oss_keys(*teams: str) -> dict[str, str]:
    """The config values of per-team keys for ``teams`` (and the endpoint they require)."""
    keys = json.dumps({team: oss_key_of(team) for team in teams})
    return {OSS_TEAM_KEYS: keys, "trainstack:ossEndpoint": OSS_ENDPOINT}


def fake_crd(kind: str, file: str) -> str:
    """A small CRD shaped like KubeDL's (never KubeDL's own files: those are not copied here)."""
    group = file.split("_", 1)[0]
    plural = file.split("_", 1)[1].removesuffix(".yaml")
    return (
        f"---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        f"metadata:\n  annotations:\n    controller-gen.kubebuilder.io/version: v0.6.1\n"
        f"  name: {plural}.{group}\nspec:\n  group: {group}\n  names:\n    kind: {kind}\n"
        f"    plural: {plural}\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n"
        f"    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n"
        f"        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    )


def fake_release(folder: Path) -> Path:
    """A folder laid out like a KubeDL release checkout: config/crd/bases/<file>."""
    from trainstack.infra.platform.config import KUBEDL_CRDS

    bases = folder / "config/crd/bases"
    bases.mkdir(parents=True)
    for kind, file in KUBEDL_CRDS.items():
        (bases / file).write_text(fake_crd(kind, file))
    return folder


@pytest.fixture(scope="session")
def ready() -> dict[str, dict[str, str]]:
    return READY


@pytest.fixture(scope="session")
def kubedl_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project root whose CRD folders are mirrored (from fake releases, each with its own
    lock)."""
    from trainstack.infra.platform.kubedl_source import mirror
    from trainstack.infra.platform.trainer_release import JOBSET_RELEASE, TRAINER_RELEASE
    from trainstack.trainer.versions import JOBSET_VERSION, TRAINER_VERSION

    base = tmp_path_factory.mktemp("kubedl")
    release = fake_release(base / "release")
    root = base / "root"
    mirror(str(release), root / CRD_FOLDER, write_lock_version="v0.5.0")
    # and Trainer's and JobSet's, for an environment set to `trainstack:operator: trainer`
    for other, version in ((TRAINER_RELEASE, TRAINER_VERSION), (JOBSET_RELEASE, JOBSET_VERSION)):
        source = base / other.name / other.release_path
        source.mkdir(parents=True)
        for kind, file in other.crds.items():
            (source / file).write_text(fake_crd(kind, file))
        mirror(
            str(base / other.name),
            root / other.folder(version),
            write_lock_version=version,
            release=other,
        )
    # Kueue's, for the shipped environments that queue (fake files, under its real lock's names)
    from trainstack.infra.platform.kueue_release import KUEUE_RELEASE, KUEUE_VERSION

    kueue = base / "kueue-release"
    for kind, file in KUEUE_RELEASE.crds.items():
        path = kueue / KUEUE_RELEASE.release_path / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fake_crd(kind, file))
    mirror(
        str(kueue),
        root / KUEUE_RELEASE.folder(KUEUE_VERSION),
        write_lock_version=KUEUE_VERSION,
        release=KUEUE_RELEASE,
    )
    return root


RRSA_ARN = "acs:ram::1234567890:oidc-provider/ack-rrsa-c0ffee"
RRSA_ISSUER = "https://oidc-ack-cn-hangzhou.oss-cn-hangzhou.aliyuncs.com/c0ffee"
FAKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
FAKE_KUBECONFIG = (  # from the mocked ACK credential: an admin client certificate
    "apiVersion: v1\nkind: Config\ncurrent-context: admin\nclusters:\n- name: kubernetes\n"
    "  cluster:\n    server: https://47.96.0.10:6443\n"
    f"    certificate-authority-data: {FAKE_CA}\n"
    "contexts:\n- name: admin\n  context: {cluster: kubernetes, user: admin}\n"
    "users:\n- name: admin\n  user: {client-certificate-data: QURNSU4tQ0VSVA==, "
    "client-key-data: QURNSU4tS0VZ}\n"
)


class RecordingMocks(pulumi.runtime.Mocks):
    """Stands in for the cloud and the engine: records every resource and invoke."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        self.stack_outputs: dict[str, dict[str, Any]] = {}  # StackReference name -> outputs
        self.secret_outputs: list[str] = ["kubeconfig"]
        self.root: Path = REPO  # where kubedl:crdSource is resolved (the fixture sets a mirror)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        if args.typ == "pulumi:pulumi:StackReference":
            stack = args.inputs.get("name", args.name)  # the referenced stack's full name
            return stack, {
                "name": stack,
                "outputs": self.stack_outputs.get(stack, {}),
                "secretOutputNames": self.secret_outputs,
            }
        state = dict(args.inputs)
        if args.typ == "alicloud:nas/mountTarget:MountTarget":
            state["mountTargetDomain"] = "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com"
        if (
            args.typ == "kubernetes:core/v1:Secret"
            and args.inputs.get("type") == "kubernetes.io/service-account-token"
        ):
            # What Kubernetes' token controller fills in (and pulumi-kubernetes waits for).
            token = f"token-of-{args.inputs['metadata']['namespace']}"
            state["data"] = {"token": base64.b64encode(token.encode()).decode(), "ca.crt": FAKE_CA}
        if args.typ == "alicloud:cs/managedKubernetes:ManagedKubernetes":
            state["rrsaMetadata"] = {
                "enabled": True,
                "ramOidcProviderArn": RRSA_ARN,
                "rrsaOidcIssuerUrl": RRSA_ISSUER,
            }
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[Any]]:
        self.calls.append(args)
        if args.token == "alicloud:cs/getClusterCredential:getClusterCredential":
            return {"kubeConfig": FAKE_KUBECONFIG, "clusterId": args.args["clusterId"]}, []
        return {}, []

    # --- lookups for assertions ----------------------------------------------------------

    def of_type(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str, name: str) -> dict[str, Any]:
        found = [r for r in self.of_type(typ) if r.name == name]
        assert len(found) == 1, f"expected one {typ} named {name}, found {len(found)}"
        return found[0].inputs

    # --- running programs -------------------------------------------------------------

    def configure(self, values: dict[str, str], secret_keys: list[str]) -> None:
        pulumi.runtime.set_all_config(values, secret_keys)

    def use_env(self, env: str, **overrides: str) -> dict[str, str]:
        """Configure a shipped environment as Pulumi would pass it, set up for `pulumi up`
        (the READY steps done; registryPassword a secret)."""
        from trainstack.envfile import find_project, read_env

        cfg = read_env(find_project(REPO), env)
        values = {**cfg.values, **READY.get(env, {}), **overrides}
        self.configure(values, sorted(cfg.secret_keys | {"trainstack:registryPassword"}))
        return values

    def use_team_keys(self, env: str, *teams: str, **overrides: str) -> dict[str, str]:
        """``use_env`` plus a per-team OSS AccessKey for ``teams``, set as a secret."""
        values = self.use_env(env, **team_oss_keys(*teams), **overrides)
        self.configure(values, ["trainstack:registryPassword", OSS_TEAM_KEYS])
        return values

    def build(self) -> Any:
        """The platform program for the configured stack, as `pulumi up` runs it; built once
        per worker for the same inputs (tests/infra/buildmemo.py)."""
        from tests.infra.buildmemo import build_once
        from trainstack.infra.platform.program import build, load_stack_config

        return build_once(self, lambda: self.run(lambda: build(load_stack_config(root=self.root))))

    @staticmethod
    def run(program: Callable[[], T]) -> T:
        """Run ``program`` under the mocks; return once every registration has finished."""
        box: dict[str, T] = {}

        async def body() -> None:
            box["value"] = program()

        settings.SETTINGS.rpc_manager.clear()
        with mock_registrations():  # as `trainstack plan` runs a program under mocks
            _sync_await(run_pulumi_func(body))
        return box["value"]

    @staticmethod
    def resolve(value: Any) -> tuple[Any, bool]:
        """The settled value of an Output (after ``run``) and whether it is secret."""
        out = pulumi.Output.from_input(value)
        return _sync_await(out.future()), bool(_sync_await(out.is_secret()))


@contextmanager
def mocked(root: Path) -> Iterator[RecordingMocks]:
    """Fresh mocks set for a program run, its config cleared again afterwards."""
    recorder = RecordingMocks()
    recorder.root = root
    settings.ROOT.set(None)  # a fresh root stack for this test's project and stack
    pulumi.runtime.set_mocks(recorder, project="trainstack", stack="test", preview=False)
    pulumi.runtime.set_all_config({}, [])
    try:
        yield recorder
    finally:
        pulumi.runtime.set_all_config({}, [])


@pytest.fixture
def mocks(kubedl_root: Path) -> Iterator[RecordingMocks]:
    with mocked(kubedl_root) as recorder:
        yield recorder


@pytest.fixture(scope="module")
def built_once(kubedl_root: Path) -> Callable[[Callable[[RecordingMocks], T]], T]:
    """``read(mocks)`` run on mocks of its own, once per module and ``read``; each call returns
    a deep copy of what it gave. Building the platform program takes most of a second: a test
    that only reads plain values out of a build (policy specs, resolved parameters) shares one
    build with the module's other tests, and a copy of its own keeps one test's changes from
    reaching the next. ``read`` is keyed by identity: a module-level function. Pulumi's mocks
    are process-global: a test that takes ``built_once`` does not take ``mocks`` too (a first
    call would set mocks of its own in their place)."""
    done: dict[Callable[[RecordingMocks], Any], Any] = {}

    def once(read: Callable[[RecordingMocks], T]) -> T:
        if read not in done:
            with mocked(kubedl_root) as recorder:
                done[read] = read(recorder)
        return copy.deepcopy(done[read])  # type: ignore[no-any-return]

    return once
