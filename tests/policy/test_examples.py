"""The shipped example runs pass the policies on the environments they are written for (their
``env`` tag, as tests/plan/test_examples_plan.py reads it); runs without one are local-only
(``file://`` data for ``trainstack run --local``) and are not deployed anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack.platformnames import ENV_TAG
from trainstack.spec import load_run

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [
    (p, env)
    for p in sorted((REPO / "components").glob("*/runs/*.yaml"))
    if (env := load_run(p).tags.get(ENV_TAG)) is not None
]


def test_every_cluster_example_is_checked() -> None:
    assert {env for _, env in EXAMPLES} == {"local", "ack-dev"}
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize(
    ("run", "env"), EXAMPLES, ids=[f"{p.parent.parent.name}/{p.name}-{e}" for p, e in EXAMPLES]
)
def test_the_shipped_example_passes_on_its_environment(run: Path, env: str) -> None:
    done = Cli()("policy", "check", run, "--env", env, "--project", REPO, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
