"""`Pulumi.<env>.yaml` is read with the spec reader's limits: an alias bomb,
an oversized file or a too-deep nesting is one clear error, fast and in bounded memory."""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

import pytest

from tests.clirunner import Cli, Result

REPO = Path(__file__).resolve().parents[2]

# ~400 bytes that expand to 9^9 strings when an unbounded loader builds them.
BOMB = "config:\n  a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n"
    for i in range(8)
)


def _limit_memory() -> None:  # the old reader would take gigabytes: fail instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))


def _plan(tmp: Path, text: str) -> Result:
    shutil.copy(REPO / "Pulumi.yaml", tmp / "Pulumi.yaml")
    shutil.copytree(REPO / "platform", tmp / "platform")  # KubeDL's CRD lock
    (tmp / "Pulumi.bad.yaml").write_text(text)
    # A bare environment: nothing of the caller's Pulumi or trainstack settings.
    return Cli()(
        "plan", "--env", "bad", cwd=tmp, timeout=60, preexec_fn=_limit_memory, inherit_env=False
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BOMB, "Pulumi.bad.yaml:3:10: YAML aliases (*name) are not allowed"),
        (
            "config:\n  trainstack:x: " + "[" * 200 + "]" * 200 + "\n",
            "nested deeper than 64 levels",
        ),
        (
            "config:\n  trainstack:x: '" + "y" * (2 << 20) + "'\n",
            "bytes; stack config files are limited to",
        ),
    ],
)
def test_hostile_stack_config_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    assert len(BOMB) < 600
    done = _plan(tmp_path, text)
    assert done.returncode == 2, done.stderr[-2000:]
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_normal_environment_still_plans(tmp_path: Path) -> None:
    done = _plan(tmp_path, (REPO / "Pulumi.local.yaml").read_text())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "to create" in done.stdout


def _odd_env_file(tmp: Path, kind: str) -> None:
    path = tmp / "Pulumi.bad.yaml"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("Pulumi.bad.yaml")


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("directory", "error: Pulumi.bad.yaml: not a regular file"),
        ("fifo", "error: Pulumi.bad.yaml: not a regular file"),
        ("symlink-loop", "error: Pulumi.bad.yaml: cannot read: Too many levels of symbolic links"),
    ],
)
def test_an_environment_file_that_is_not_a_file_says_so(
    tmp_path: Path, kind: str, message: str
) -> None:
    """Not "does not exist" with the environment itself as the did-you-mean."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    _odd_env_file(tmp_path, kind)
    for verb in (
        ["plan"],
        ["policy", "check"],
        ["render", REPO / "components/mnist-ddp/runs/local.yaml"],
    ):
        done = Cli()(*verb, "--env", "bad", cwd=tmp_path, timeout=60, inherit_env=False)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and done.stderr.count("error:") == 1, done.stderr
        assert "does not exist" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_a_kubeconfig_that_is_not_a_file_is_one_clear_error(tmp_path: Path, kind: str) -> None:
    """`trainstack:kubeconfig: /dev/zero` grew plan to 14 GB; a FIFO hung."""
    target = {"device": Path("/dev/zero"), "fifo": tmp_path / "kc.fifo", "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    local = (REPO / "Pulumi.local.yaml").read_text()
    text = local.replace("config:\n", f"config:\n  trainstack:kubeconfig: {target}\n", 1)
    done = _plan(tmp_path, text)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "trainstack:kubeconfig: expected a path to a kubeconfig file" in done.stderr
    said = {"device": "a device", "fifo": "a FIFO", "folder": "a folder"}[kind]
    assert f"{str(target)!r}, {said}" in done.stderr
    assert "Traceback" not in done.stderr
