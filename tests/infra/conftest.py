"""The one Pulumi mocks fixture for tests/infra.

Pulumi's mocks are process-global, so they are set here, per test, and never at module level;
program modules are imported inside tests, after the mocks are set. ``preview=False``: under a
preview, callbacks given to ``apply`` on unknown values never run and their asserts would pass
silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pulumi
import pytest
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
RRSA_ARN = "acs:ram::1234567890:oidc-provider/ack-rrsa-c0ffee"
RRSA_ISSUER = "https://oidc-ack-cn-hangzhou.oss-cn-hangzhou.aliyuncs.com/c0ffee"
FAKE_KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n# from the mocked ACK credential\n"


class RecordingMocks(pulumi.runtime.Mocks):
    """Stands in for the cloud and the engine: records every resource and invoke."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        self.stack_outputs: dict[str, dict[str, Any]] = {}  # StackReference name -> outputs
        self.secret_outputs: list[str] = ["kubeconfig"]

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        if args.typ == "pulumi:pulumi:StackReference":
            stack = args.inputs.get("name", args.name)  # the referenced stack's full name
            return stack, {"name": stack, "outputs": self.stack_outputs.get(stack, {}),
                           "secretOutputNames": self.secret_outputs}
        state = dict(args.inputs)
        if args.typ == "alicloud:nas/mountTarget:MountTarget":
            state["mountTargetDomain"] = "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com"
        if args.typ == "alicloud:cs/managedKubernetes:ManagedKubernetes":
            state["rrsaMetadata"] = {"enabled": True, "ramOidcProviderArn": RRSA_ARN,
                                     "rrsaOidcIssuerUrl": RRSA_ISSUER}
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
        """Configure a shipped environment as Pulumi would pass it (secure values replaced)."""
        from trainstack.plan.envfile import find_project, read_env

        cfg = read_env(find_project(REPO), env)
        values = {**cfg.values, **overrides}
        self.configure(values, sorted(cfg.secret_keys))
        return values

    @staticmethod
    def run(program: Callable[[], T]) -> T:
        """Run ``program`` under the mocks; return once every registration has finished."""
        box: dict[str, T] = {}

        async def body() -> None:
            box["value"] = program()

        settings.SETTINGS.rpc_manager.clear()
        _sync_await(run_pulumi_func(body))
        return box["value"]

    @staticmethod
    def resolve(value: Any) -> tuple[Any, bool]:
        """The settled value of an Output (after ``run``) and whether it is secret."""
        out = pulumi.Output.from_input(value)
        return _sync_await(out.future()), bool(_sync_await(out.is_secret()))


@pytest.fixture
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    settings.ROOT.set(None)  # a fresh root stack for this test's project and stack
    pulumi.runtime.set_mocks(recorder, project="trainstack", stack="test", preview=False)
    pulumi.runtime.set_all_config({}, [])
    yield recorder
    pulumi.runtime.set_all_config({}, [])

