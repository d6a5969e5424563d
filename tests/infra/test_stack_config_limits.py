"""`Pulumi.<env>.yaml` is read with the spec reader's limits (issue 14, item 8): an alias bomb,
an oversized file or a too-deep nesting is one clear error, fast and in bounded memory."""

from __future__ import annotations

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
