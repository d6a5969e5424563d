"""The cache of the platform's planned outputs keys on every input the program reads
(trainstack/infra/platform/inputs.py): a real offline plan of each shipped environment is
traced (every file it opens, every environment variable it reads) and each must be one the key
covers. A file or variable the program starts to read fails here until the key names it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import CRD_FOLDER, FAKE_KUBECONFIG, REPO, fake_crd, fake_release
from tests.trainer.environments import TRAINER_ENV
from trainstack.infra.platform import inputs
from trainstack.infra.platform.trainer_release import JOBSET_RELEASE, TRAINER_RELEASE
from trainstack.trainer.versions import JOBSET_VERSION, TRAINER_VERSION

# Read while the platform is planned, and why the result cannot depend on it.
NOT_INPUTS = {
    "PYTHONASYNCIODEBUG": "asyncio's debug mode: diagnostics only",
}

TRACE = """
import json, os, sys
from pathlib import Path
import grpc, pulumi, pulumi_kubernetes  # imported before any plan, as the CLI's plan does
from trainstack.envfile import find_project
from trainstack.plan import platformcache, service

root, env = Path(sys.argv[1]), sys.argv[2]
opened, read = [], []
getitem = os._Environ.__getitem__
def traced(self, name):
    read.append(name)
    return getitem(self, name)
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.path.abspath(os.fsdecode(args[0])))
sys.addaudithook(hook)
os._Environ.__getitem__ = traced
service.plan_platform(env, root)
os._Environ.__getitem__ = getitem
keyed = platformcache._input_paths(find_project(root), env)
print(json.dumps({"opened": opened, "read": read, "keyed": [str(p) for p in keyed]}))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped project with its CRD folder mirrored, so the program reads every file."""
    from trainstack.infra.platform.kubedl_source import mirror

    base = tmp_path_factory.mktemp("traced")
    root = base / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.local.yaml", "Pulumi.ack-dev.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copy(REPO / f"Pulumi.{TRAINER_ENV}.yaml", root / f"Pulumi.{TRAINER_ENV}.yaml")
    mirror(str(fake_release(base / "release")), root / CRD_FOLDER, write_lock_version="v0.5.0")
    for release in (TRAINER_RELEASE, JOBSET_RELEASE):
        source = base / release.name / release.release_path
        source.mkdir(parents=True)
        for kind, file in release.crds.items():
            (source / file).write_text(fake_crd(kind, file))
        version = TRAINER_VERSION if release is TRAINER_RELEASE else JOBSET_VERSION
        folder = root / release.folder(version)
        mirror(str(base / release.name), folder, write_lock_version=version, release=release)
    # Kueue's lock as the repository has it (its CRD files unmirrored: an offline plan)
    shutil.copytree(REPO / "platform/kueue", root / "platform/kueue")
    (base / "kubeconfig").write_text(FAKE_KUBECONFIG)
    return root


def _not_program_input(path: str) -> bool:
    """The interpreter, the SDKs and trainstack's own modules (Pulumi reads source lines for
    each resource's stack trace): the key has them as the runtime and the source digest."""
    import trainstack

    places = {sys.prefix, sys.base_prefix, str(Path(trainstack.__file__).parent)}
    return any(path.startswith(place + os.sep) for place in places) or path == "-c"


def _covered(name: str) -> bool:
    return (
        bool(inputs.environment_inputs({name: "true"}))
        or inputs.config_in_environment({name: ""})
        or name in NOT_INPUTS
    )


@pytest.mark.parametrize("env", ["local", "ack-dev", TRAINER_ENV])
def test_every_file_and_variable_the_platform_plan_reads_is_keyed(project: Path, env: str) -> None:
    kubeconfig = project.parent / "kubeconfig"
    done = subprocess.run(
        [sys.executable, "-c", TRACE, str(project), env],
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO), "KUBECONFIG": str(kubeconfig)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout.splitlines()[-1])
    opened = {p for p in trace["opened"] if not _not_program_input(p)}
    keyed = set(trace["keyed"])
    assert opened <= keyed, sorted(opened - keyed)
    assert str(project / "Pulumi.yaml") in opened  # the trace saw the program's reads
    assert str(project / CRD_FOLDER / "kubedl.lock.json") in opened
    assert str(project / "platform/kueue/v0.19.2/kueue.lock.json") in opened
    assert any(p.endswith("_tfjobs.yaml") for p in opened)
    if env != "ack-dev":
        assert str(kubeconfig) in opened
    if env == TRAINER_ENV:  # and Trainer's and JobSet's, which a change to must miss the cache
        assert (
            str(project / TRAINER_RELEASE.folder(TRAINER_VERSION) / "trainer.lock.json") in opened
        )
        assert any(p.endswith("jobset.x-k8s.io_jobsets.yaml") for p in opened)
    assert [name for name in trace["read"] if not _covered(name)] == []


def test_credentials_are_not_keyed_but_switches_are() -> None:
    environ = {
        "PULUMI_ACCESS_TOKEN": "pul-0123456789",
        "PULUMI_CONFIG_PASSPHRASE": "hunter2",
        "ALICLOUD_SECRET_KEY": "abc",
        "PULUMI_K8S_ENABLE_SECRET_MUTABLE": "true",
        "PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY": "false",
        "KUBECONFIG": "/k",
        "EDITOR": "vi",
    }
    assert inputs.environment_inputs(environ) == {
        "KUBECONFIG": "/k",
        "PULUMI_K8S_ENABLE_SECRET_MUTABLE": "true",
        "PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY": "false",
    }
    assert not inputs.config_in_environment({"PULUMI_CONFIG_PASSPHRASE": "x"})
    assert inputs.config_in_environment({"PULUMI_CONFIG_KUBEDL_IMAGE": "x"})
