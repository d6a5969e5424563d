from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.local.helpers import REPO, cli_env, trainstack_argv


class Cli:
    """Runs `python -m trainstack …` as a real subprocess against one state home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = cli_env(home)

    def __call__(self, *args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(trainstack_argv(*args), cwd=REPO, env=self.env, text=True,
                              capture_output=True, timeout=timeout, check=False)

    def start(self, *args: str | Path) -> subprocess.Popen[str]:
        return subprocess.Popen(trainstack_argv(*args), cwd=REPO, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home")
