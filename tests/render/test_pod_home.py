"""A pod whose user the image does not know can still install its requirements and write to ~.

Pods run as `runAsUser` (1000 unless the run says otherwise). For a user id absent from the
image's /etc/passwd the container runtime sets HOME=/, which that user cannot write. pip, finding
the image's site-packages not writable either, falls back to a user install under $HOME/.local
("Defaulting to user installation because normal site-packages is not writeable") and fails, so
`pip install -r requirements.txt` exited 1 in every such pod whenever a requirement was not
already in the image (the project's own credit-xgb nightly, python:3.11-slim + xgboost-cpu),
while the local run installed into a venv and succeeded. The script now replaces a HOME it
cannot write with the pod's own writable folder (/ml/home/, an emptyDir).

Here the rendered container runs as a pod would (tests/render/podrun.py), with a HOME no one can
write (root, which runs this test in CI, can write `/`, so a path under /proc stands in for it)
and, in front of PATH, a stand-in for pip that does what pip's user-install fallback does: write
under $HOME/.local, or fail as pip does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.render.podrun import start_container

UNWRITABLE_HOME = "/proc/trainstack-home-nobody-can-write"
PIP = """#!/bin/sh
mkdir -p "$HOME/.local/lib" 2>/dev/null && echo "$@" > "$HOME/.local/lib/installed" || {
  echo "ERROR: Could not install packages due to an OSError: Permission denied: $HOME/.local" >&2
  exit 1
}
"""


def _tools(tmp_path: Path) -> str:
    """PATH with the pip stand-in first and python3 as this interpreter's real binary (a
    version manager's shim would put its own pip first on PATH)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip").write_text(PIP)
    (bin_dir / "pip").chmod(0o755)
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    return f"{bin_dir}:/usr/bin:/bin"


PROBE = """\
import json, os, pathlib
home = pathlib.Path(os.environ["HOME"])
(home / ".cache").mkdir(parents=True, exist_ok=True)  # what torch hub or HF would do
pathlib.Path(os.environ["PROBE_DIR"], "seen.json").write_text(json.dumps({"HOME": str(home)}))
"""


@pytest.mark.subprocess
def test_requirements_install_and_home_writes_succeed_for_a_user_the_image_lacks(
    tmp_path: Path,
) -> None:
    files = {"requirements.txt": "xgboost-cpu==3.0.0\n", "probe.py": PROBE}
    proc, probe = start_container(
        tmp_path,
        "xgboost",
        "master",
        files,
        "python3 probe.py",
        env={"HOME": UNWRITABLE_HOME, "PATH": _tools(tmp_path)},
    )
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert code == 0, "the pod's replica failed: pip could not install for a user without a home"
    home = tmp_path / "pod" / "ml" / "home"
    installed = (home / ".local" / "lib" / "installed").read_text()
    assert installed.strip() == "install -r requirements.txt"
    assert json.loads((probe / "seen.json").read_text()) == {"HOME": str(home)}


@pytest.mark.subprocess
def test_a_home_the_user_can_write_is_kept(tmp_path: Path) -> None:
    """An image user with a home of its own (a jovyan, a root) keeps it."""
    own = tmp_path / "own-home"
    own.mkdir()
    files = {"requirements.txt": "xgboost-cpu==3.0.0\n", "probe.py": PROBE}
    env = {"HOME": str(own), "PATH": _tools(tmp_path)}
    proc, probe = start_container(tmp_path, "xgboost", "master", files, "python3 probe.py", env=env)
    assert proc.wait(timeout=60) == 0
    assert json.loads((probe / "seen.json").read_text()) == {"HOME": str(own)}
    assert (own / ".local" / "lib" / "installed").exists()
