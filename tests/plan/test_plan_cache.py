"""The cache of the platform's planned outputs across processes
(trainstack/plan/platformcache.py): a hit never runs the platform program, any input change is
a miss, a damaged entry is a miss that is rewritten, no secret reaches the file.

A "new process" in-process is the process memo emptied (as tests/clirunner.py does); the first
test runs real processes. No test times anything: hits are counted as platform plans not made.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra.conftest import FAKE_KUBECONFIG, REPO
from trainstack.envfile import SECRET_PLACEHOLDER, find_project
from trainstack.plan import platformcache, service

RUN = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped platform project, a state home of its own, the admin kubeconfig in
    a file of its own."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.local.yaml", "Pulumi.ack-dev.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "platform", root / "platform")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(FAKE_KUBECONFIG)
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for name in [n for n in os.environ if n.startswith("PULUMI_CONFIG")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("TRAINSTACK_PLAN_CACHE", raising=False)
    return root


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The environments the platform program was actually run for, in order."""
    made: list[str] = []
    real = service.plan_platform

    def counting(env: str, start: Path | None = None) -> object:
        made.append(env)
        return real(env, start)

    monkeypatch.setattr(service, "plan_platform", counting)
    # every memo and cached digest, before and after: a test that edits the source digest
    # must not leave its value to the next test in this worker
    _new_process()
    yield made
    _new_process()


def _new_process() -> None:
    platformcache._MEMO.clear()
    platformcache._source_digest.cache_clear()
    platformcache._runtime_fingerprint.cache_clear()


def _outputs(root: Path, env: str = "local") -> dict[str, object]:
    return service.platform_outputs(find_project(root), env)[0]


def _entry(root: Path, env: str = "local") -> Path:
    return platformcache.entry_path(find_project(root), env)


def test_a_second_process_answers_from_the_cache_without_the_platform_program(
    project: Path,
) -> None:
    script = (
        "import sys\nfrom trainstack.cli.main import main\n"
        "try:\n"
        f"    main(['plan', {str(RUN)!r}, '--env', 'local', '--project', {str(project)!r}])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('REGISTRY', 'sqlite3' in sys.modules)\n"
        "print('PLATFORM PROGRAM', 'trainstack.infra.platform.program' in sys.modules)\n"
    )

    def run() -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done

    first, second = run(), run()
    assert first.stdout.endswith("PLATFORM PROGRAM True\n")
    assert second.stdout.endswith("PLATFORM PROGRAM False\n")  # never imported, never run
    assert "REGISTRY False\n" in second.stdout  # finding the cache does not open SQLite
    assert second.stdout.replace("GRAM False", "GRAM True") == first.stdout  # the same plan
    assert second.stderr == first.stderr


def test_the_same_inputs_plan_the_platform_once_across_processes(
    project: Path, plans: list[str]
) -> None:
    first = _outputs(project)
    _new_process()
    again = _outputs(project)
    assert plans == ["local"]
    assert again == first
    assert json.loads(_entry(project).read_text())["outputs"] == first


def _edit_env_file(root: Path) -> None:
    path = root / "Pulumi.local.yaml"
    path.write_text(path.read_text().replace("name: nlp", "name: speech"))


def _edit_project_file(root: Path) -> None:
    path = root / "Pulumi.yaml"
    path.write_text(path.read_text() + "# an edit\n")


def _edit_lock(root: Path) -> None:
    path = root / "platform/kubedl/v0.5.0/kubedl.lock.json"
    path.write_text(path.read_text() + "\n")


def _edit_kubeconfig(root: Path) -> None:
    path = Path(os.environ["KUBECONFIG"])
    path.write_text(path.read_text().replace("47.96.0.10", "47.96.0.11"))


def _switch_env_var(root: Path) -> None:
    os.environ["PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY"] = "false"


def _edit_source(root: Path) -> None:
    platformcache._source_digest.cache_clear()
    real = platformcache.tree_digest
    platformcache.tree_digest = lambda folder: real(folder) + "-edited"  # type: ignore[assignment]


def _other_python(root: Path) -> None:
    sys.version = sys.version + " (another build)"


@pytest.mark.parametrize(
    "change",
    [
        _edit_env_file,
        _edit_project_file,
        _edit_lock,
        _edit_kubeconfig,
        _switch_env_var,
        _edit_source,
        _other_python,
    ],
)
def test_any_input_changed_plans_the_platform_again(
    project: Path, plans: list[str], monkeypatch: pytest.MonkeyPatch, change: object
) -> None:
    monkeypatch.setattr(platformcache, "tree_digest", platformcache.tree_digest)
    monkeypatch.setattr(sys, "version", sys.version)
    monkeypatch.setenv("PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY", "true")
    before = _outputs(project)
    assert callable(change)
    change(project)
    _new_process()
    after = _outputs(project)
    assert plans == ["local", "local"]
    if change is _edit_env_file:  # the new plan, not the cached one
        assert before != after and "speech" in json.dumps(after)
    _new_process()
    assert _outputs(project) == after
    assert plans == ["local", "local"]  # and the new entry is a hit in turn


def test_a_crd_file_that_appears_is_checked_not_answered_from_the_cache(
    project: Path, plans: list[str]
) -> None:
    from trainstack.errors import ConfigError

    _outputs(project)
    (project / "platform/kubedl/v0.5.0/training.kubedl.io_tfjobs.yaml").write_text("kind: x\n")
    _new_process()
    with pytest.raises(ConfigError, match="does not match the lock"):
        _outputs(project)
    assert plans == ["local", "local"]


def test_an_edit_in_the_same_process_is_seen_too(project: Path, plans: list[str]) -> None:
    _outputs(project)
    _edit_env_file(project)
    assert "speech" in json.dumps(_outputs(project))
    assert plans == ["local", "local"]


def test_the_source_digest_follows_every_file_of_the_package(tmp_path: Path) -> None:
    tree = tmp_path / "pkg"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.py").write_text("x = 1\n")
    (tree / "sub" / "t.j2").write_text("{{ x }}\n")
    digest = platformcache.tree_digest(tree)
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "a.pyc").write_bytes(b"\0")
    assert platformcache.tree_digest(tree) == digest  # bytecode is not source
    (tree / "sub" / "t.j2").write_text("{{ y }}\n")
    assert platformcache.tree_digest(tree) != digest
    (tree / "sub" / "t.j2").write_text("{{ x }}\n")
    (tree / "b.py").write_text("")
    assert platformcache.tree_digest(tree) != digest


def _fifo(path: Path) -> None:
    os.mkfifo(path)


DAMAGE = {
    "garbage": b"\x00\xff not json",
    "truncated": b'{"format": "trainstack.platform-outputs/1", "key": "',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge number": b'{"format": ' + b"9" * 5000 + b"}",
    "foreign": b'{"name": "something else"}',
    "a list": b"[1, 2, 3]",
    "another key": b'{"format": "trainstack.platform-outputs/1", "key": "0", "outputs": {}, '
    b'"secret": [], "logged": []}',
    "not utf-8": b'{"format": "\xff"}',
    "empty": b"",
}


@pytest.mark.parametrize("damage", [*DAMAGE, "fifo", "bad types"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(
    project: Path, plans: list[str], damage: str
) -> None:
    first = _outputs(project)
    entry = _entry(project)
    good = json.loads(entry.read_text())
    entry.unlink()
    if damage == "fifo":
        _fifo(entry)
    elif damage == "bad types":  # the right key, a wrong shape
        entry.write_text(json.dumps({**good, "secret": [1], "logged": [["warning", 3]]}))
    else:
        entry.write_bytes(DAMAGE[damage])
    _new_process()
    assert _outputs(project) == first
    assert plans == ["local", "local"]
    assert json.loads(entry.read_text()) == good  # rewritten whole


def test_a_folder_in_the_entry_s_place_or_an_unwritable_home_only_costs_the_cache(
    project: Path, plans: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _entry(project)
    entry.mkdir(parents=True)
    first = _outputs(project)
    _new_process()
    assert _outputs(project) == first
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the home's folder would be")
    monkeypatch.setenv("TRAINSTACK_HOME", str(blocked))
    _new_process()
    assert _outputs(project) == first
    assert plans == ["local", "local", "local"]
    assert list(entry.parent.glob(".entry-*")) == []  # no temporary file left behind


@pytest.mark.parametrize("kubeconfig_in", ["file", "config"])
def test_no_secret_value_reaches_the_cache(
    project: Path, plans: list[str], kubeconfig_in: str
) -> None:
    """Secrets come as ciphertext (a plan never opens it; plain text is refused) or as the admin
    kubeconfig, a file or config in clear: none of it may reach the entry."""
    path = project / "Pulumi.local.yaml"
    # vision's own AccessKey, as `pulumi config set --secret --path` writes it
    keys = {"id": "v1:CipherKeyId88", "secret": "v1:CipherKeySecret99"}
    lines = "  trainstack:registryPassword: {secure: v1:CipherRegistry77}\n"
    lines += "  trainstack:ossAccessKeys:\n    vision:\n"
    lines += "".join(f"      {k}: {{secure: {v}}}\n" for k, v in keys.items())
    lines += "  trainstack:ossEndpoint: oss-cn-hangzhou.aliyuncs.com\n"
    kubeconfig = FAKE_KUBECONFIG.replace("client-key-data: QURNSU4tS0VZ", "token: KubeToken42")
    if kubeconfig_in == "config":
        lines += f"  trainstack:kubeconfig: {json.dumps(kubeconfig)}\n"
    else:
        Path(os.environ["KUBECONFIG"]).write_text(kubeconfig)
    path.write_text(path.read_text().replace("config:\n", "config:\n" + lines, 1))
    outputs, secret = service.platform_outputs(find_project(project), "local")
    text = _entry(project).read_text()
    for value in [
        "v1:CipherRegistry77",
        *keys.values(),
        "KubeToken42",
        "QURNSU4tQ0VSVA",
        "47.96.0.10",
    ]:
        assert value.removeprefix("v1:") not in text
    assert {"kubeconfig", "teamKubeconfigs"} <= set(secret)
    assert all(outputs[name] == SECRET_PLACEHOLDER for name in secret)
    assert json.loads(text)["outputs"] == outputs
    assert plans == ["local"]


def test_the_program_s_warnings_are_shown_on_a_hit_too(
    project: Path, plans: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        _outputs(project, "ack-dev")
    planned = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert any("kubedl:image is not set" in message for _, message in planned)
    caplog.clear()
    _new_process()
    with caplog.at_level(logging.WARNING):
        _outputs(project, "ack-dev")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == planned
    assert plans == ["ack-dev"]


@pytest.mark.parametrize(
    "variable",
    [
        ("TRAINSTACK_PLAN_CACHE", "off"),
        ("PULUMI_CONFIG", "{}"),
        ("PULUMI_CONFIG_TRAINSTACK_REGISTRYPASSWORD", "fromTheEnvironment"),
    ],
)
def test_switched_off_or_config_in_the_environment_is_never_cached(
    project: Path, plans: list[str], monkeypatch: pytest.MonkeyPatch, variable: tuple[str, str]
) -> None:
    monkeypatch.setenv(*variable)
    first = _outputs(project)
    _new_process()
    assert _outputs(project) == first
    assert plans == ["local", "local"]
    assert not _entry(project).exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('  trainstack:kubeconfig: "/tmp/a\\0b"\n', "control character"),
        ('  kubedl:crdSource: "platform/a\\0b"\n', "control character"),
        ("  trainstack:kubeconfig: ~no-such-user-here/config\n", "no such user's home"),
    ],
)
def test_odd_paths_in_the_environment_file_are_the_program_s_to_report(
    project: Path, plans: list[str], line: str, message: str
) -> None:
    """The key is taken before the program runs: whatever the program refuses in a path, taking
    the key neither fails first nor differently; and nothing is cached."""
    from trainstack.errors import ConfigError

    path = project / "Pulumi.local.yaml"
    path.write_text(path.read_text().replace("config:\n", "config:\n" + line, 1))
    with pytest.raises(ConfigError, match=message):
        _outputs(project)
    assert plans == ["local"] and not _entry(project).exists()


def test_an_input_edited_while_the_platform_is_planned_is_not_filed(
    project: Path, plans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = service.plan_platform

    def editing(env: str, start: Path | None = None) -> object:
        result = real(env, start)
        _edit_project_file(project)
        return result

    monkeypatch.setattr(service, "plan_platform", editing)
    _outputs(project)
    assert not _entry(project).exists()


WRITER = """
import sys
from pathlib import Path
from trainstack.plan import platformcache as pc
path, me = Path(sys.argv[1]), sys.argv[2]
for i in range(150):
    pc._write(path, "key", pc.Planned({"writer": me, "i": i, "pad": "x" * 20000}, [], []))
"""
READER = """
import sys
from pathlib import Path
from trainstack.plan import platformcache as pc
path, seen = Path(sys.argv[1]), 0
for i in range(600):
    found = pc._read(path, "key")
    if found is not None:
        assert set(found.outputs) == {"writer", "i", "pad"}, found.outputs
        assert len(found.outputs["pad"]) == 20000
        seen += 1
print(seen)
"""


def test_concurrent_writers_leave_one_whole_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache" / "entry.json"  # in the state home: only there is it read
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def start(code: str, *args: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", code, str(path), *args]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)

    procs = [start(WRITER, str(n)) for n in range(4)] + [start(READER)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 5
    found = platformcache._read(path, "key")
    assert found is not None and found.outputs["i"] == 149
    assert int(outs[-1]) >= 0  # every read was a miss or a whole entry
    assert [p.name for p in path.parent.iterdir()] == ["entry.json"]  # no temporary left
