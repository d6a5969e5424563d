"""deploy / status / destroy through the Automation API, against a recording stand-in of the CLI.

The stand-in is a ``PulumiCommand`` whose ``run`` records the arguments and answers with canned
``CommandResult``s, so the exact sequence of CLI calls is asserted without a Pulumi CLI.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.automation import CommandResult, PulumiCommand
from pulumi.automation.errors import create_command_error
from semver import VersionInfo

from tests.clirunner import Cli
from tests.deploy.test_cluster import api  # noqa: F401  (the recorded Kubernetes API fixture)
from trainstack.errors import ConfigError, NotFoundError, ToolMissingError, UserError
from trainstack.spec import load_run

REPO = Path(__file__).resolve().parents[2]
RUN_FILE = REPO / "components" / "mnist-ddp" / "runs" / "baseline.yaml"
STACK = "local.vision.mnist-baseline-01"  # <env>.<namespace>.<run>
PLATFORM = "organization/trainstack/local"
SCOPES = "organization/trainstack-scopes/"
SCOPE_SECRETS = ("kubeconfig", "teamKubeconfigs")
PLATFORM_OUTPUTS = {
    "mode": "kubeconfig",
    "kubeconfig": "[secret]",
    "kubeContext": "kind-x",
    "namespaces": {"vision": "team-vision"},
    "pullSecretName": "trainstack-registry",
    "kubedlVersion": "v0.5.0",
    "ossAuth": {"type": "secret", "secretName": "trainstack-oss"},
}
# What the CLI prints when a stack's state does not open with the passphrase it was given
# (pkg/secrets/passphrase: every secret in the state is decrypted on load, even for
# `stack output` without --show-secrets).
WRONG_PASSPHRASE = (
    "error: could not deserialize deployment: failed to decrypt: incorrect "
    "passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase or "
    "set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase"
)
MANIFESTS = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "mnist-baseline-01-config", "namespace": "vision"},
        "data": {"hyperparameters.json": '{"epochs": 3}'},
    },
    {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist-baseline-01", "namespace": "vision"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}}},
    },
]


class RecordingPulumi(PulumiCommand):
    """Stands in for the ``pulumi`` CLI: records every call, answers from canned results."""

    def __init__(
        self,
        stacks: set[str] | None = None,
        fail_up: bool = False,
        platform: dict[str, Any] | None = None,
        passphrases: dict[str, str] | None = None,
        scopes: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        # Deliberately not calling super().__init__: it would run `pulumi version`.
        self.command = "pulumi"
        self.version = VersionInfo.parse("3.272.0")
        self.stacks = set(stacks or ())
        self.fail_up = fail_up
        self.platform = platform  # the platform stack's outputs; None: no platform stack
        # stack -> the passphrase its state was encrypted with; reading it takes that one.
        self.passphrases = dict(passphrases or {})
        # published team scopes (deploy/scope.py): stack -> outputs; any other scope is absent
        self.scopes = dict(scopes or {})
        self.calls: list[list[str]] = []
        self.envs: list[dict[str, str]] = []
        # the backend's stack tags: what a teammate on the same backend reads
        self.tags: dict[str, dict[str, str]] = {}
        # stack -> its state as `stack export` prints it (the backend's run index lives in one)
        self.deployments: dict[str, dict[str, Any]] = {}
        # stack -> its updates, oldest first, each with the config it ran with (`stack history`)
        self.updates: dict[str, list[dict[str, Any]]] = {}
        # stack -> the config in its shared file in the project folder (`config set-all`)
        self.config: dict[str, dict[str, str]] = {}
        self.config_at_destroy: dict[str, dict[str, str]] = {}

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Any,
        on_output: Any = None,
        on_error: Any = None,
    ) -> CommandResult:
        self.calls.append(list(args))
        self.envs.append(dict(additional_env))
        result = self._locked(list(args), additional_env) or self._answer(list(args))
        if on_output:
            for line in result.stdout.splitlines():
                on_output(line)
        if result.code != 0:
            raise create_command_error(result)
        return result

    def _locked(self, args: list[str], env: Any) -> CommandResult | None:
        """Commands that load a stack's state fail when its passphrase is not the one given."""
        stack = args[args.index("--stack") + 1] if "--stack" in args else None
        loads_state = args[0] in ("up", "destroy") or args[:2] in (
            ["stack", "output"],
            ["stack", "history"],
        )
        wanted = self.passphrases.get(stack or "")
        if loads_state and wanted is not None and env.get("PULUMI_CONFIG_PASSPHRASE") != wanted:
            return CommandResult("", WRONG_PASSPHRASE, 255)
        return None

    def _answer(self, args: list[str]) -> CommandResult:
        stack = args[args.index("--stack") + 1] if "--stack" in args else None
        if args[:2] == ["stack", "select"] and stack not in self.stacks:
            return CommandResult("", f"error: no stack named '{stack}' found", 255)
        if args[:2] == ["stack", "init"]:
            self.stacks.add(args[2])
        if args[:2] == ["stack", "rm"]:
            self.stacks.discard(args[-1])
            self.tags.pop(args[-1], None)
        if args[:3] == ["stack", "tag", "set"]:
            self.tags.setdefault(stack or "", {})[args[3]] = args[4]
        if args[:3] == ["stack", "tag", "ls"]:
            return CommandResult(json.dumps(self.tags.get(stack or "", {})), "", 0)
        if args[:2] == ["stack", "ls"]:
            return CommandResult(
                json.dumps([{"name": s, "current": False} for s in sorted(self.stacks)]), "", 0
            )
        if args[:2] == ["config", "set-all"]:
            pairs = [args[i + 1] for i, a in enumerate(args) if a in ("--plaintext", "--secret")]
            self.config.setdefault(stack or "", {}).update(p.split("=", 1) for p in pairs)
        if args[0] == "up":
            self._record_update(stack or "", args)
        if args[0] == "destroy":  # `destroy --run-program` runs with the stack's own file
            self.config_at_destroy[stack or ""] = dict(self.config.get(stack or "", {}))
        if args[0] == "up" and self.fail_up:
            return CommandResult(
                "Updating (local.mnist-baseline-01)\n error: cluster unreachable",
                "error: update failed",
                255,
            )
        if args[0] in ("up", "destroy"):
            return CommandResult(f"{args[0]} of {stack}: 3 changes", "", 0)
        if args[:2] == ["stack", "export"] or args[:2] == ["stack", "import"]:
            return self._state(args, stack or "")
        if args[:2] == ["stack", "output"] and stack in self.deployments:
            (root,) = [r for r in self.deployments[stack].get("resources", []) if "outputs" in r]
            return CommandResult(json.dumps(root["outputs"]), "", 0)
        if args[:2] == ["stack", "output"] and (stack or "").startswith(SCOPES):
            if stack not in self.scopes and stack not in self.stacks:
                return CommandResult("", f"error: no stack named '{stack}' found", 255)
            shown = self.scopes.get(stack, {})
            if "--show-secrets" not in args:
                shown = {k: "[secret]" if k in SCOPE_SECRETS else v for k, v in shown.items()}
            return CommandResult(json.dumps(shown), "", 0)
        if args[:2] == ["stack", "output"] and stack == PLATFORM:
            if self.platform is None:
                return CommandResult("", f"error: no stack named '{stack}' found", 255)
            return CommandResult(json.dumps(self.platform), "", 0)
        if args[:2] == ["stack", "output"]:
            secret = "kubeconfig-contents" if "--show-secrets" in args else "[secret]"
            return CommandResult(
                json.dumps(
                    {
                        "jobName": "mnist-baseline-01",
                        "namespace": "vision",
                        "kind": "PyTorchJob",
                        "providerKubeconfig": secret,
                    }
                ),
                "",
                0,
            )
        if args[:2] == ["stack", "history"] and self.updates.get(stack or ""):
            newest_first = self.updates[stack or ""][::-1]
            if "--page-size" in args:
                newest_first = newest_first[: int(args[args.index("--page-size") + 1])]
            return CommandResult(json.dumps(newest_first), "", 0)
        if args[:2] == ["stack", "history"]:
            return CommandResult(
                json.dumps(
                    [
                        {
                            "kind": "update",
                            "startTime": "2026-01-02T03:04:05.000000Z",
                            "endTime": "2026-01-02T03:05:05.000000Z",
                            "message": "",
                            "environment": {},
                            "config": {},
                            "result": "succeeded",
                            "version": 1,
                        }
                    ]
                ),
                "",
                0,
            )
        return CommandResult("", "", 0)

    def _state(self, args: list[str], stack: str) -> CommandResult:
        """`stack export` / `stack import`: a stack's state, as a deployment document."""
        if stack not in self.stacks:
            return CommandResult("", f"error: no stack named '{stack}' found", 255)
        if args[1] == "import":
            with open(args[args.index("--file") + 1], encoding="utf-8") as file:
                self.deployments[stack] = json.load(file)["deployment"]
            return CommandResult("", "", 0)
        deployment = self.deployments.get(stack, {"manifest": {"version": "v3.272.0"}})
        return CommandResult(json.dumps({"version": 3, "deployment": deployment}), "", 0)

    def _record_update(self, stack: str, args: list[str]) -> None:
        """An update as the backend's history keeps it: the config it ran with (its
        ``--config-file``, else the stack's shared file as it is now), and its result."""
        values = dict(self.config.get(stack, {}))
        if "--config-file" in args:
            document = yaml.safe_load(Path(args[args.index("--config-file") + 1]).read_text())
            values = document["config"]
        config = {k: {"value": v, "secret": False} for k, v in values.items()}
        updates = self.updates.setdefault(stack, [])
        updates.append(
            {
                "kind": "update",
                "startTime": "2026-01-02T03:04:05.000000Z",
                "endTime": "2026-01-02T03:05:05.000000Z",
                "message": "",
                "environment": {},
                "config": config,
                "result": "failed" if self.fail_up else "succeeded",
                "version": len(updates) + 1,
            }
        )

    def verbs(self) -> list[str]:
        """Each call as its first words, for asserting the sequence."""
        words = []
        for call in self.calls:
            n = 3 if call[:2] in (["stack", "tag"], ["config", "set-all"]) else 2
            words.append(" ".join(call[:n]))
        return words


def policy_project(root: Path, level: str) -> Path:
    """A platform project whose ``local`` environment sets every policy rule to ``level``."""
    from trainstack.policy.rules import RULES

    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text("name: trainstack\nruntime: python\n")
    rules = {r.id: {"level": level} for r in RULES}
    (root / "Pulumi.local.yaml").write_text(json.dumps({"config": {"policy:rules": rules}}))
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The deploy mechanics under test, not the example's fit to this stand-in platform: its
    # environment makes every policy advisory (test_deploy_stops_on_a_mandatory_violation).
    monkeypatch.setenv("TRAINSTACK_PROJECT", str(policy_project(tmp_path / "project", "advisory")))
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("TRAINSTACK_BACKEND_URL", raising=False)
    return tmp_path / "home"


def deploy(cli: RecordingPulumi, home: Path) -> Any:
    from trainstack.deploy.service import deploy_run
    from trainstack.spec import load_run

    return deploy_run(load_run(RUN_FILE), MANIFESTS, "local", command=cli, home=home)


def test_first_deploy_inits_configures_tags_and_ups_the_stack(home: Path) -> None:
    cli = RecordingPulumi()
    entry = deploy(cli, home)
    # run, env, component, version, experiment, team, 4 job coordinates, the source stack,
    # the job's digest, the run's identity
    n_tags = 13
    assert cli.verbs() == [
        "stack select",  # <env>.<namespace>.<run>: no such stack
        "stack select",  # <env>.<run>, as stacks were named before: none either
        "stack init",
        "stack tag ls",  # a new stack has no tags: no earlier deploy by anyone
        *["stack tag set"] * 3,  # run, env, namespace: the same for every deploy of the stack
        "up --yes",  # with this deploy's config: nothing goes to the shared config file
        "stack output",
        "stack output",
        "stack history",
        "stack history",  # the newest update's config: the tags, once it is deployed
        *["stack tag set"] * n_tags,
        "config set-all --stack",  # the shared config file, from the same update
        "stack history",  # no other deploy's update landed meanwhile
        # its tags, copied into the backend's run index (deploy/backendindex.py)
        "stack tag ls",
        "stack export",  # no index stack yet:
        "stack init",
        "stack export",
        "stack import",
    ]
    init = cli.calls[2]
    assert init[:3] == ["stack", "init", STACK]
    assert init[init.index("--secrets-provider") + 1] == "passphrase"
    # the shared config file is written only after the update, with the values it ran with
    assert cli.config[STACK] == {
        "trainstack-runs:env": "local",
        "trainstack-runs:run": "mnist-baseline-01",
        "trainstack-runs:platformStack": PLATFORM,
    }
    assert cli.verbs().index("config set-all --stack") > cli.verbs().index("up --yes")
    config = {k: v["value"] for k, v in cli.updates[STACK][-1]["config"].items()}
    assert config["trainstack-runs:platformStack"] == "organization/trainstack/local"
    assert config["trainstack-runs:env"] == "local"
    assert config["trainstack-runs:version"] == load_run(RUN_FILE).component.version
    up = next(c for c in cli.calls if c[0] == "up")
    assert not Path(up[up.index("--config-file") + 1]).exists(), "the private file is removed"
    tags = {c[3]: c[4] for c in cli.calls if c[:3] == ["stack", "tag", "set"]}
    from trainstack.infra.run.identity import run_identity
    from trainstack.infra.run.program import manifest_hash

    assert tags == {
        "trainstack:component": "mnist-ddp",
        "trainstack:version": load_run(RUN_FILE).component.version,
        "trainstack:experiment": "mnist-baselines",
        "trainstack:team": "vision",
        "trainstack:run": "mnist-baseline-01",
        "trainstack:env": "local",
        "trainstack:job": "mnist-baseline-01",
        "trainstack:namespace": "vision",
        "trainstack:kind": "PyTorchJob",
        "trainstack:apiVersion": "training.kubedl.io/v1alpha1",
        "trainstack:source": PLATFORM,  # no team scope: the platform stack
        "trainstack:specHash": manifest_hash(MANIFESTS),
        "trainstack:identity": run_identity(load_run(RUN_FILE), "vision"),
    }
    up = next(c for c in cli.calls if c[0] == "up")
    assert "--refresh" in up, "deploy refreshes before it updates"
    assert up[up.index("--exec-kind") + 1] == "auto.inline"
    assert up[up.index("--stack") + 1] == STACK
    assert entry.outputs["kind"] == "PyTorchJob"
    assert entry.outputs["providerKubeconfig"] == "[secret]"


def test_backend_and_passphrase_travel_in_the_environment_only(home: Path) -> None:
    cli = RecordingPulumi()
    deploy(cli, home)
    env = cli.envs[-1]
    assert env["PULUMI_BACKEND_URL"] == f"file://{home / 'pulumi'}"
    phrase = env["PULUMI_CONFIG_PASSPHRASE"]
    assert len(phrase) >= 32
    assert not any(phrase in arg for call in cli.calls for arg in call)
    stored = home / "pulumi-passphrase"
    assert stored.read_text().strip() == phrase
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    # The runs project lives under the state home, backend URL included.
    project = (home / "pulumi-project" / "Pulumi.yaml").read_text()
    assert "trainstack-runs" in project and f"file://{home / 'pulumi'}" in project


def test_passphrase_and_backend_from_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "from-the-env")
    monkeypatch.setenv("TRAINSTACK_BACKEND_URL", "s3://acme-pulumi-state")
    cli = RecordingPulumi()
    entry = deploy(cli, home)
    assert cli.envs[-1]["PULUMI_CONFIG_PASSPHRASE"] == "from-the-env"
    assert cli.envs[-1]["PULUMI_BACKEND_URL"] == "s3://acme-pulumi-state"
    assert entry.backend == "s3://acme-pulumi-state"
    assert not (home / "pulumi-passphrase").exists()


def test_redeploy_selects_the_existing_stack(home: Path) -> None:
    cli = RecordingPulumi(stacks={STACK})
    deploy(cli, home)
    # No index entry here: what the backend's tags say about an earlier deploy is read first.
    assert cli.verbs()[:3] == ["stack select", "stack tag ls", "stack tag set"]


def test_deploy_records_the_run_with_its_stack(home: Path) -> None:
    from trainstack.deploy.index import RunIndex
    from trainstack.registry import Registry, RunKind, RunStatus

    entry = deploy(RecordingPulumi(), home)
    assert RunIndex(home).find("mnist-baseline-01") == entry
    with Registry.open(home) as registry:
        record = registry.get(entry.registry_id)
    assert record.kind is RunKind.CLUSTER
    assert record.stack_name == STACK
    assert record.status is RunStatus.RUNNING
    assert record.component_version == load_run(RUN_FILE).component.version


def test_failed_up_is_a_clear_error_and_a_failed_record(home: Path) -> None:
    from trainstack.deploy.service import DeployFailedError
    from trainstack.registry import Registry, RunStatus

    with pytest.raises(DeployFailedError) as caught:
        deploy(RecordingPulumi(fail_up=True), home)
    assert "cluster unreachable" in caught.value.message
    assert caught.value.exit_code == 1
    with Registry.open(home) as registry:
        (record,) = registry.list()
    assert record.status is RunStatus.FAILED


def test_status_reads_history_and_masks_secret_outputs(home: Path) -> None:
    from trainstack.deploy.service import status

    cli = RecordingPulumi()
    deploy(cli, home)
    cli.calls.clear()
    result = status("mnist-baseline-01", command=cli, home=home)
    assert cli.verbs() == ["stack select", "stack history", "stack output", "stack output"]
    assert "--show-secrets" not in cli.calls[1]
    assert (result.last_kind, result.last_result) == ("update", "succeeded")
    assert result.outputs["providerKubeconfig"] == "[secret]"
    assert result.outputs["jobName"] == "mnist-baseline-01"


def test_destroy_destroys_then_removes_the_stack_and_forgets_it(home: Path) -> None:
    from trainstack.deploy.index import RunIndex
    from trainstack.deploy.service import destroy
    from trainstack.registry import Registry, RunStatus

    cli = RecordingPulumi()
    entry = deploy(cli, home)
    cli.calls.clear()
    destroy("mnist-baseline-01", command=cli, home=home)
    assert cli.verbs() == [
        "stack select",
        "destroy --skip-preview",
        "stack history",
        "stack rm",
        "stack export",  # and out of the backend's run index
        "stack import",
    ]
    assert ["stack", "rm", "--yes", STACK] in cli.calls
    assert "runs" in cli.deployments["trainstack-index"]["resources"][0]["outputs"]
    assert cli.deployments["trainstack-index"]["resources"][0]["outputs"]["runs"] == {}
    assert STACK not in cli.stacks
    with pytest.raises(NotFoundError):
        RunIndex(home).find("mnist-baseline-01")
    with Registry.open(home) as registry:
        assert registry.get(entry.registry_id).status is RunStatus.CANCELLED


def test_status_of_an_unknown_run_suggests_a_name(home: Path) -> None:
    from trainstack.deploy.service import status

    deploy(RecordingPulumi(), home)
    with pytest.raises(NotFoundError) as caught:
        status("mnist-baseline-1", command=RecordingPulumi(), home=home)
    assert caught.value.hint == "did you mean 'mnist-baseline-01'?"


def test_looking_up_an_unknown_run_creates_no_state(tmp_path: Path) -> None:
    from trainstack.deploy.service import destroy, status

    fresh = tmp_path / "fresh-home"
    for verb in (status, destroy):
        with pytest.raises(NotFoundError):
            verb("nothing", command=RecordingPulumi(), home=fresh)
    assert not fresh.exists(), "no passphrase or project folder for a typo"


@pytest.mark.parametrize(
    "argv",
    [
        ["deploy", str(RUN_FILE), "--env", "local"],
        ["status", "mnist-baseline-01"],
        ["destroy", "mnist-baseline-01", "--yes"],
        # without --yes and without an answer (no stdin): the install message, not "aborted"
        # after a y/N question that could not have led anywhere
        ["destroy", "mnist-baseline-01"],
        ["wait", "mnist-baseline-01"],
    ],
)
def test_without_the_cli_each_verb_says_what_to_install(
    argv: list[str], home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(RecordingPulumi(), home)  # so status/destroy find the run and reach the CLI
    monkeypatch.setenv("PATH", str(home / "empty-bin"))  # no `pulumi` anywhere
    done = Cli().invoke(*argv)
    assert done.code == ToolMissingError.exit_code == 3
    err = done.err
    assert "the Pulumi CLI (`pulumi`)" in err and "not installed" in err
    assert "https://www.pulumi.com/docs/install/" in err
    assert argv[0] in err.split("not installed")[0], "the message names the verb that needs it"
    assert "Aborted" not in err and "aborted" not in err
    assert "Traceback" not in err


def test_find_pulumi_refuses_a_missing_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from trainstack.deploy.workspace import find_pulumi

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError):
        find_pulumi()


def test_a_broken_cli_is_one_error_not_a_traceback(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `pulumi` on PATH whose `pulumi version` fails (a wrong binary, a broken install)."""
    bin_dir = home.parent / "broken-bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text("#!/bin/sh\necho 'error: this pulumi is broken' >&2\nexit 255\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    done = Cli().invoke("deploy", str(RUN_FILE), "--env", "local")
    assert done.code == ToolMissingError.exit_code, done.err
    assert "the Pulumi CLI on PATH cannot be used: `pulumi version` exited with 255" in done.err
    assert "https://www.pulumi.com/docs/install/" in done.err
    assert "Traceback" not in done.err


def test_deploy_reads_the_platform_then_renders_for_it(home: Path) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    cli = RecordingPulumi(platform=PLATFORM_OUTPUTS)
    entry = deploy_file(RUN_FILE, "local", command=cli, home=home)
    # The team's secrets scope is looked for first (none is published here), then the
    # platform's outputs, masked: the kubeconfig is never decrypted outside the engine.
    assert cli.calls[0] == ["stack", "output", "--json", "--stack", SCOPES + "local.vision"]
    assert cli.calls[1] == ["stack", "output", "--json", "--stack", PLATFORM]
    # the backend's listing: a stack this run left under another name or team (deploy/moved.py)
    assert cli.verbs()[2:4] == ["stack ls", "stack output"]
    assert cli.verbs()[4:9] == [
        "stack select",
        "stack select",
        "stack init",
        "stack tag ls",
        "stack tag set",
    ]
    assert "up --yes" in cli.verbs()
    # rendered into the platform's namespace for the team, which names the stack
    assert entry.stack == "local.team-vision.mnist-baseline-01" and entry.env == "local"


def test_deploy_stops_on_a_mandatory_violation_before_anything_is_created(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.service import deploy as deploy_file
    from trainstack.errors import PolicyError

    monkeypatch.setenv("TRAINSTACK_PROJECT", str(policy_project(tmp_path / "strict", "mandatory")))
    cli = RecordingPulumi(platform={**PLATFORM_OUTPUTS, "registry": "registry.example.com"})
    with pytest.raises(PolicyError) as caught:
        deploy_file(RUN_FILE, "local", command=cli, home=home)
    assert caught.value.exit_code == 1
    # the example's image is not in the platform's registry: rule, resource, field, fix
    assert (
        "allowed-registries: kubernetes:training.kubedl.io/v1alpha1:PyTorchJob::"
        "pytorchjob-mnist-baseline-01" in caught.value.message
    )
    # one violation per image, at its first container, counting the others
    assert "ontainers[0].image" in caught.value.message
    assert "more container" in caught.value.message
    # (the team's scope, then the platform's outputs)
    assert cli.verbs() == ["stack output"] * 2, "no stack and no resource before the policy passes"


def test_deploy_renders_with_the_platform_project_s_templates(home: Path, tmp_path: Path) -> None:
    """What plan shows is what deploy registers: the platform project's templates/
    render the manifests deploy hashes, checks and hands to the run program."""
    from trainstack.deploy.service import deploy as deploy_file
    from trainstack.infra.run.program import manifest_hash
    from trainstack.infra.run.rendered import render
    from trainstack.render.overrides import for_project, packaged

    project = tmp_path / "project"  # the home fixture's $TRAINSTACK_PROJECT
    metadata = packaged("_metadata.yaml.j2")
    assert metadata is not None
    (project / "templates").mkdir()
    (project / "templates" / "_metadata.yaml.j2").write_text(
        metadata.replace("meta.labels | tojson", 'dict(meta.labels, platform="acme") | tojson')
    )
    templates = for_project(project)
    assert templates is not None
    run = load_run(RUN_FILE)
    overridden = render(run, PLATFORM_OUTPUTS, "local", templates)
    assert {m["metadata"]["labels"]["platform"] for m in overridden} == {"acme"}
    lines: list[str] = []
    cli = RecordingPulumi(platform=PLATFORM_OUTPUTS)
    entry = deploy_file(RUN_FILE, "local", command=cli, home=home, on_output=lines.append)
    assert entry.spec_hash == manifest_hash(overridden)
    assert entry.spec_hash != manifest_hash(render(run, PLATFORM_OUTPUTS, "local"))
    assert any("_metadata.yaml.j2 (replaces the packaged one)" in line for line in lines)


def test_rendered_for_the_platform_namespace(home: Path) -> None:
    from trainstack.infra.run.rendered import render
    from trainstack.spec import load_run

    manifests = render(load_run(RUN_FILE), PLATFORM_OUTPUTS, "local")
    namespaced = [m for m in manifests if m["kind"] != "PersistentVolume"]
    assert {m["metadata"]["namespace"] for m in namespaced} == {"team-vision"}


def test_deploy_without_a_platform_stack_says_so(home: Path) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    cli = RecordingPulumi(platform=None)
    with pytest.raises(NotFoundError) as caught:
        deploy_file(RUN_FILE, "local", command=cli, home=home)
    assert "no platform stack 'organization/trainstack/local'" in caught.value.message
    assert "pulumi up --stack local" in (caught.value.hint or "")
    assert cli.verbs() == ["stack output"] * 2, "nothing is created without a platform"


# --- one passphrase for the platform and its run stacks -----------------------------------------

PLATFORM_PASSPHRASE = "the-platform-passphrase"


def test_a_platform_passphrase_mismatch_is_one_clear_error_before_anything_exists(
    home: Path,
) -> None:
    from trainstack.deploy.service import deploy as deploy_file
    from trainstack.errors import ConfigError

    cli = RecordingPulumi(platform=PLATFORM_OUTPUTS, passphrases={PLATFORM: PLATFORM_PASSPHRASE})
    with pytest.raises(ConfigError) as caught:
        deploy_file(RUN_FILE, "local", command=cli, home=home)
    error = caught.value
    generated = home / "pulumi-passphrase"
    assert error.message == (
        f"platform stack '{PLATFORM}' was encrypted with another passphrase than the run stacks' "
        f"passphrase ({generated}), so a run stack's StackReference could not decrypt its "
        "kubeconfig"
    )
    assert error.hint is not None
    assert (
        "set PULUMI_CONFIG_PASSPHRASE to the passphrase `pulumi up --stack local` ran with"
        in error.hint
    )
    # Detected on the first call: no run stack, no record, no index entry.
    assert cli.verbs() == ["stack output"] * 2  # the team's scope (none), then the platform
    assert STACK not in cli.stacks
    assert not (home / "stacks.json").exists()
    phrase = generated.read_text().strip()
    assert phrase not in error.render() and PLATFORM_PASSPHRASE not in error.render()


def test_the_shared_passphrase_from_the_environment_deploys(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PLATFORM_PASSPHRASE)
    cli = RecordingPulumi(platform=PLATFORM_OUTPUTS, passphrases={PLATFORM: PLATFORM_PASSPHRASE})
    entry = deploy_file(RUN_FILE, "local", command=cli, home=home)
    assert "up --yes" in cli.verbs() and entry.stack == "local.team-vision.mnist-baseline-01"


def test_a_wrong_passphrase_from_the_environment_is_named_as_such(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import trainstack.deploy.workspace as workspace

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "not-the-platform-one")
    cli = RecordingPulumi(platform=PLATFORM_OUTPUTS, passphrases={PLATFORM: PLATFORM_PASSPHRASE})
    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    done = Cli().invoke("deploy", str(RUN_FILE), "--env", "local")
    assert done.code == 2
    err = done.err
    assert "than the run stacks' passphrase ($PULUMI_CONFIG_PASSPHRASE)" in err
    assert "hint: set PULUMI_CONFIG_PASSPHRASE to the passphrase" in err
    assert "not-the-platform-one" not in err and "Traceback" not in err
    assert cli.verbs() == ["stack output"] * 2  # the team's scope (none), then the platform


def test_a_run_stack_that_does_not_open_says_what_to_set(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.service import status
    from trainstack.errors import ConfigError

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "the-first-passphrase")
    cli = RecordingPulumi(passphrases={STACK: "the-first-passphrase"})
    deploy(cli, home)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "a-later-passphrase")
    with pytest.raises(ConfigError) as caught:
        status("mnist-baseline-01", command=cli, home=home)
    assert caught.value.message == (
        f"stack '{STACK}' does not open with the run stacks' passphrase ($PULUMI_CONFIG_PASSPHRASE)"
    )
    assert caught.value.hint == (
        "set PULUMI_CONFIG_PASSPHRASE to the passphrase the stack was deployed with"
    )


# --- a changed run recreates its job; an unchanged one leaves it ------------------------------


def test_an_unchanged_redeploy_keeps_the_job_and_its_record(home: Path, api: Any) -> None:  # noqa: F811
    from tests.deploy.test_cluster import kubeconfig
    from trainstack.deploy.service import deploy_run
    from trainstack.registry import Registry, RunStatus
    from trainstack.spec import load_run

    # an unchanged deploy asks the cluster whether the job is still there (it is:
    # tests/deploy/test_finished_runs.py has the job KubeDL's TTL deleted)
    path = "/apis/training.kubedl.io/v1alpha1/namespaces/vision/pytorchjobs/mnist-baseline-01"
    api.serve(path, (200, b'{"metadata": {"name": "mnist-baseline-01"}}'))
    cli = RecordingPulumi(platform={"kubeconfig": kubeconfig(api.url)})
    first = deploy(cli, home)
    said: list[str] = []
    second = deploy_run(
        load_run(RUN_FILE), MANIFESTS, "local", command=cli, home=home, on_output=said.append
    )
    assert "the run is unchanged: its job was left as it is (--rerun submits it again)" in said
    assert second.spec_hash == first.spec_hash
    assert second.registry_id == first.registry_id, "same job: same run record"
    with Registry.open(home) as registry:
        (record,) = registry.list()
    assert record.status is RunStatus.RUNNING


def test_a_changed_run_gets_a_new_job_and_record(home: Path) -> None:
    import copy
    import dataclasses

    from trainstack.deploy.service import deploy_run
    from trainstack.registry import Registry, RunStatus
    from trainstack.spec import load_run

    cli = RecordingPulumi()
    first = deploy(cli, home)
    changed = copy.deepcopy(MANIFESTS)
    changed[0]["data"]["hyperparameters.json"] = '{"epochs": 5}'
    run = load_run(RUN_FILE)
    run = dataclasses.replace(run, parameters=type(run.parameters)({**run.parameters, "epochs": 5}))
    second = deploy_run(run, changed, "local", command=cli, home=home)
    assert second.spec_hash != first.spec_hash and second.identity != first.identity
    assert cli.tags[STACK]["trainstack:specHash"] == second.spec_hash
    with Registry.open(home) as registry:
        old, new = registry.get(first.registry_id), registry.get(second.registry_id)
    assert (old.status, old.reason) == (RunStatus.CANCELLED, "superseded by a new deploy")
    assert new.status is RunStatus.RUNNING


def test_a_failed_deploy_retried_unchanged_gets_a_new_record(home: Path) -> None:
    from trainstack.registry import Registry, RunStatus

    cli = RecordingPulumi(fail_up=True)
    with pytest.raises(UserError):
        deploy(cli, home)
    assert "trainstack:specHash" not in cli.tags[STACK], "nothing deployed: no digest"
    cli.fail_up = False
    entry = deploy(cli, home)
    with Registry.open(home) as registry:
        assert registry.get(entry.registry_id).status is RunStatus.RUNNING
        assert sorted(str(r.status) for r in registry.list()) == ["failed", "running"]


def test_rerun_submits_an_unchanged_job_again(home: Path) -> None:
    from trainstack.deploy.service import deploy_run
    from trainstack.spec import load_run

    cli = RecordingPulumi()
    first = deploy(cli, home)
    again = deploy_run(load_run(RUN_FILE), MANIFESTS, "local", command=cli, home=home, rerun=True)
    assert again.spec_hash != first.spec_hash and again.registry_id != first.registry_id


def test_the_job_is_replaced_on_any_change_and_a_custom_job_skips_await(mocks: Any) -> None:
    """What makes the recreation happen, read off the resource options the program sets."""
    import pulumi

    from trainstack.infra.run.program import SKIP_AWAIT_ANNOTATION, build_run

    seen: dict[str, pulumi.ResourceOptions] = {}

    def capture(args: pulumi.ResourceTransformationArgs) -> None:
        seen[args.name] = args.opts

    custom = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sweep-01", "namespace": "vision"},
        "spec": {
            "completionMode": "Indexed",
            "completions": 2,
            "template": {"spec": {"containers": [{"name": "main"}]}},
        },
    }
    mocks.stack_outputs[PLATFORM] = {"kubeconfig": "", "kubeContext": ""}

    class Run:
        name = "sweep-01"

    def program() -> Any:
        pulumi.runtime.register_stack_transformation(capture)
        return build_run(Run(), [MANIFESTS[0], custom], PLATFORM)

    mocks.run(program)
    job_opts = seen["job-sweep-01"]
    assert job_opts.replace_on_changes == ["*"] and job_opts.delete_before_replace
    assert seen["configmap-mnist-baseline-01-config"].replace_on_changes is None
    job = mocks.one("kubernetes:batch/v1:Job", "job-sweep-01")
    assert job["metadata"]["annotations"][SKIP_AWAIT_ANNOTATION] == "true"


# --- destroy after credentials rotate; a teammate on the same backend --------------------------


def test_destroy_runs_the_provider_program_with_the_platforms_current_credentials(
    home: Path,
) -> None:
    from trainstack.deploy.service import destroy

    cli = RecordingPulumi()
    deploy(cli, home)
    cli.calls.clear()
    destroy("mnist-baseline-01", command=cli, home=home)
    (call,) = [c for c in cli.calls if c[0] == "destroy"]
    assert "--run-program=true" in call, "the provider is rebuilt, not read from state"
    # the program runs with the stack's shared config, which the deploy left in place
    assert cli.config_at_destroy[STACK]["trainstack-runs:platformStack"] == PLATFORM
    assert cli.config_at_destroy[STACK]["trainstack-runs:run"] == "mnist-baseline-01"


def test_a_teammate_on_the_same_backend_sees_watches_and_destroys_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.deploy.service import destroy, locate

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "the-team-passphrase")
    monkeypatch.setenv("TRAINSTACK_BACKEND_URL", "s3://acme-pulumi-state")
    backend = RecordingPulumi()  # one backend, two people
    mine, theirs = tmp_path / "alice", tmp_path / "bob"
    entry = deploy(backend, mine)
    found = locate("mnist-baseline-01", command=backend, home=theirs)
    assert (found.entry.stack, found.entry.env, found.entry.outputs) == (
        entry.stack,
        "local",
        {
            "jobName": "mnist-baseline-01",
            "namespace": "vision",
            "kind": "PyTorchJob",
            "apiVersion": "training.kubedl.io/v1alpha1",
            "platformStack": PLATFORM,
        },
    )
    assert found.entry.registry_id is None, "bob's registry does not have alice's run"
    import trainstack.deploy.workspace as workspace

    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)
    done = Cli().invoke("status", "--home", str(theirs))
    assert done.code == 0, done.err
    header, row = done.out.splitlines()
    assert header.split() == ["RUN", "ENV", "TEAM", "JOB", "COMPONENT"]
    assert row.split() == [
        "mnist-baseline-01",
        "local",
        "vision",
        "PyTorchJob",
        "vision/mnist-baseline-01",
        f"mnist-ddp@{load_run(RUN_FILE).component.version}",
    ]
    assert header.index("JOB") == row.index("PyTorchJob")
    # the shared --format (tests/cli/test_output_format.py), and --json as its alias
    as_json = Cli().invoke("status", "--format", "json", "--home", str(theirs))
    assert as_json.code == 0, as_json.err
    assert [e["run"] for e in json.loads(as_json.out)] == ["mnist-baseline-01"]
    assert Cli().invoke("status", "--json", "--home", str(theirs)).out == as_json.out
    one = Cli().invoke(
        "status", "mnist-baseline-01", "--no-live", "--format", "json", "--home", str(theirs)
    )
    assert one.code == 0, one.err
    assert json.loads(one.out)["run"]["run"] == "mnist-baseline-01"
    destroy("mnist-baseline-01", command=backend, home=theirs)
    assert STACK not in backend.stacks


def test_a_run_deployed_from_one_directory_is_found_from_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.service import locate

    monkeypatch.delenv("TRAINSTACK_HOME", raising=False)
    monkeypatch.delenv("TRAINSTACK_BACKEND_URL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cli = RecordingPulumi()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    entry = deploy(cli, None)  # type: ignore[arg-type]
    monkeypatch.chdir(tmp_path / "b")
    assert locate("mnist-baseline-01", command=cli).entry == entry
    assert (tmp_path / "state" / "trainstack" / "stacks.json").is_file()


def test_deploy_records_where_each_output_lands_and_runs_show_prints_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.deploy.service import deploy as deploy_file
    from trainstack.registry import Registry

    platform = {**PLATFORM_OUTPUTS, "artifactStore": "pvc://trainstack-artifacts/runs/"}
    readme_job = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"
    entry = deploy_file(readme_job, "local", command=RecordingPulumi(platform=platform), home=home)
    with Registry.open(home) as registry:
        record = registry.get(entry.registry_id)
    expected = {
        "model": "pvc://trainstack-artifacts/runs/vision/mnist-local/model/",
        "checkpoints": "pvc://trainstack-artifacts/runs/vision/mnist-local/checkpoints/",
    }
    assert dict(record.outputs) == expected
    done = Cli().invoke("runs", "show", record.id)
    assert done.code == 0, done.err
    out = done.out
    for name, uri in expected.items():
        assert f"output      {name}: {uri}" in out


def test_runs_recorded_in_one_directory_are_listed_from_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.registry import NewRun, Registry, state_home

    monkeypatch.delenv("TRAINSTACK_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    with Registry.open(state_home()) as registry:
        record = registry.create(NewRun(name="made-in-a", component="c", component_version="1.0.0"))
    monkeypatch.chdir(tmp_path / "b")
    done = Cli().invoke("runs", "list", "--json")
    assert done.code == 0, done.err
    assert [r["id"] for r in json.loads(done.out)] == [record.id]
    assert not (tmp_path / "a" / ".trainstack").exists()


def test_home_before_the_verb_applies_to_any_verb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.registry import NewRun, Registry

    # recorded by monkeypatch, so what `--home` exports is undone after the test
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "not-this-one"))
    monkeypatch.delenv("TRAINSTACK_HOME")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    with Registry.open(tmp_path / "team-home") as registry:
        record = registry.create(NewRun(name="r", component="c", component_version="1.0.0"))
    done = Cli().invoke("--home", str(tmp_path / "team-home"), "runs", "list", "--json")
    assert done.code == 0, done.err
    assert [r["id"] for r in json.loads(done.out)] == [record.id]


def test_destroying_a_run_whose_stack_is_gone_forgets_it(home: Path) -> None:
    from trainstack.deploy.index import RunIndex
    from trainstack.deploy.service import destroy

    cli = RecordingPulumi()
    deploy(cli, home)
    cli.stacks.clear()  # a teammate destroyed it
    with pytest.raises(NotFoundError, match="does not exist"):
        destroy("mnist-baseline-01", command=cli, home=home)
    assert RunIndex(home).entries() == []


def test_deploy_with_a_damaged_registry_is_one_clear_error_before_anything_is_deployed(
    home: Path,
) -> None:
    from trainstack.registry import RegistryError

    home.mkdir(parents=True)
    damaged = home / "registry.db"
    damaged.write_bytes(b"not a database " * 500)
    cli = RecordingPulumi()
    with pytest.raises(RegistryError, match=r"registry\.db is damaged"):
        deploy(cli, home)
    assert "up --yes" not in cli.verbs()
    assert damaged.read_bytes() == b"not a database " * 500


def test_status_and_wait_recording_into_a_damaged_registry_is_one_clear_error(home: Path) -> None:
    """`status`/`wait` put the cluster's word into the registry (deploy/watch.record): a
    registry damaged since the deploy is a RegistryError, and the file stays as it is."""
    from trainstack.deploy import watch
    from trainstack.deploy.index import RunIndex
    from trainstack.deploy.jobstate import JobState, Outcome
    from trainstack.deploy.settings import load_settings
    from trainstack.registry import RegistryError

    deploy(RecordingPulumi(), home)
    (entry,) = RunIndex(home).entries()
    damaged = home / "registry.db"
    for suffix in ("-wal", "-shm"):
        (home / f"registry.db{suffix}").unlink(missing_ok=True)
    damaged.write_bytes(b"\x00garbage" * 1000)
    state = JobState(
        kind="PyTorchJob",
        name="j",
        namespace="n",
        outcome=Outcome.SUCCEEDED,
        conditions=(),
        replicas=(),
        message=None,
    )
    with pytest.raises(RegistryError, match=r"registry\.db is damaged"):
        watch.record(load_settings(home), entry, state)
    assert damaged.read_bytes() == b"\x00garbage" * 1000


def test_a_concurrent_deploy_never_reads_a_half_written_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passphrase file was created (O_EXCL) and written afterwards; a
    second deploy that looked in between read an empty passphrase. Here the second deploy looks
    at exactly that moment: while the first is making its passphrase."""
    import secrets as secrets_module

    from trainstack.deploy import settings

    monkeypatch.delenv(settings.PASSPHRASE_ENV, raising=False)
    real = secrets_module.token_urlsafe
    seen: list[str] = []

    def racing(n: int) -> str:
        if not seen:
            seen.append("")  # the other deploy runs once, inside the first one's creation
            seen.append(settings._passphrase(tmp_path)[0])
        return real(n)

    monkeypatch.setattr(settings.secrets, "token_urlsafe", racing)
    first = settings._passphrase(tmp_path)[0]
    assert seen[1], "the concurrent deploy read an empty passphrase"
    assert first == seen[1]
    path = tmp_path / settings.PASSPHRASE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [settings.PASSPHRASE_FILE]


def test_an_empty_passphrase_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy import settings

    monkeypatch.delenv(settings.PASSPHRASE_ENV, raising=False)
    path = tmp_path / settings.PASSPHRASE_FILE
    path.write_text("\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="passphrase file is empty"):
        settings._passphrase(tmp_path)


def test_a_nul_byte_in_the_passphrase_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a crash can leave: the Automation API passes the passphrase in a subprocess's
    environment, which cannot hold a NUL (a ValueError traceback from subprocess)."""
    from trainstack.deploy import settings

    monkeypatch.delenv(settings.PASSPHRASE_ENV, raising=False)
    path = tmp_path / settings.PASSPHRASE_FILE
    path.write_bytes(b"half-written\x00\x00\x00\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="the stack passphrase cannot be read: it holds a NUL"):
        settings._passphrase(tmp_path)


class PausingPulumi(RecordingPulumi):
    """Holds the first deploy's ``up`` until another whole deploy of the same stack has run:
    two deploys at once, as the backend sees them (only the update itself is locked)."""

    def __init__(self) -> None:
        import threading

        super().__init__()
        self.first = threading.get_ident()
        self.at_up = threading.Event()
        self.go_on = threading.Event()

    def run(self, args: list[str], *rest: Any, **kwargs: Any) -> CommandResult:
        import threading

        if args[0] == "up" and threading.get_ident() == self.first and not self.at_up.is_set():
            self.at_up.set()
            assert self.go_on.wait(60), "the second deploy never finished"
        return super().run(args, *rest, **kwargs)


SCOPE = SCOPES + "local.vision"


def test_two_deploys_at_once_leave_the_tags_and_config_of_the_last_up(home: Path) -> None:
    import dataclasses
    import threading

    from trainstack.deploy.service import deploy_run
    from trainstack.spec import load_run

    second = load_run(RUN_FILE)
    component = dataclasses.replace(second.component, version="9.9.9")
    first = dataclasses.replace(second, experiment="mnist-wider", component=component)
    cli = PausingPulumi()
    failures: list[BaseException] = []

    def deploy_first() -> None:
        cli.first = threading.get_ident()
        try:
            deploy_run(first, MANIFESTS, "local", command=cli, home=home, source=SCOPE)
        except BaseException as err:  # reported from the test's own thread
            failures.append(err)
            cli.at_up.set()

    racer = threading.Thread(target=deploy_first)
    racer.start()
    assert cli.at_up.wait(60)
    deploy_run(second, MANIFESTS, "local", command=cli, home=home)  # up, and done, meanwhile
    cli.go_on.set()
    racer.join(60)
    assert not failures, failures
    # the first deploy's up ran last: what the cluster has is its run, and so must the stack say
    tags, last = cli.tags[STACK], cli.updates[STACK][-1]["config"]
    assert (tags["trainstack:version"], tags["trainstack:experiment"]) == ("9.9.9", "mnist-wider")
    assert last["trainstack-runs:version"]["value"] == "9.9.9"
    assert last["trainstack-runs:experiment"]["value"] == "mnist-wider"
    # and so does the shared config file the next `destroy --run-program` runs with
    assert cli.config[STACK]["trainstack-runs:platformStack"] == SCOPE
    assert tags["trainstack:source"] == SCOPE
    # the second deploy's update ran with its own config, not the first one's
    earlier = cli.updates[STACK][-2]["config"]
    assert earlier["trainstack-runs:version"]["value"] == second.component.version
