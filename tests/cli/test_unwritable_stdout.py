"""A standard output that cannot be written — a full disk (`> /dev/full`) or a closed descriptor
(`>&-`) — is one short error on stderr and a non-zero exit, never a traceback; the work already
done (a run's record) is kept. Real processes: the point is their descriptors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import REPO, write_run
from trainstack.registry import Registry, RunStatus

COMPONENT = REPO / "components" / "mnist-ddp" / "component.yaml"
REDIRECTS = {"full": "> /dev/full", "closed": ">&-"}


def _shell(cli: Cli, redirect: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    # bash: the arguments travel as "$@", the redirection is the case's.
    return subprocess.run(
        ["bash", "-c", f'"$0" -m trainstack "$@" {redirect}', sys.executable, *map(str, args)],
        cwd=REPO,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize("redirect", sorted(REDIRECTS))
@pytest.mark.parametrize(
    "argv",
    [["validate", COMPONENT], ["schema", "run"], ["validate", "--format", "json", COMPONENT]],
    ids=["validate", "schema", "validate-json"],
)
def test_every_verb_says_it_once(cli: Cli, redirect: str, argv: list[str | Path]) -> None:
    done = _shell(cli, REDIRECTS[redirect], *argv)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode != 0
    why = "no space left on the device" if redirect == "full" else "it is closed"
    assert done.stderr.count("error:") == 1, done.stderr
    assert f"error: cannot write to standard output: {why}" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("redirect", sorted(REDIRECTS))
def test_a_run_is_recorded_although_its_summary_cannot_be_printed(
    cli: Cli, tmp_path: Path, redirect: str
) -> None:
    spec = write_run(tmp_path, "probe", "quiet", parameters={"mode": "quick", "seconds": 0})
    done = _shell(cli, REDIRECTS[redirect], "run", spec, "--local", "--no-install")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "error: cannot write to standard output" in done.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.SUCCEEDED, record.reason
