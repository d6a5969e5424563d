"""The cached environment a component's requirements.txt is installed into: it has no pip of its
own where the parent interpreter's pip can serve it (venv's ensurepip was ~7 of the ~10 s a build
took), and gets its own where the parent has none."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from trainstack.local import pyenv


def _wheel(folder: Path) -> Path:
    """A real wheel, installable offline."""
    wheel = folder / "tsprobe_env-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tsprobe_env.py", "VALUE = 'installed'\n")
        info = "tsprobe_env-0.1.dist-info"
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tsprobe-env\nVersion: 0.1\n")
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return wheel


def _site(env: Path) -> Path:
    return env / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _imports(env: Path, module: str) -> str:
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", f"import {module}; print({module}.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


@pytest.fixture
def requirements(tmp_path: Path) -> Path:
    code = tmp_path / "code"
    code.mkdir()
    wheel = _wheel(code)
    path = code / "requirements.txt"
    path.write_text(f"./{wheel.name}\n")
    return path


def test_without_a_pip_to_borrow_the_environment_gets_its_own(
    tmp_path: Path, requirements: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This machine's base interpreter has a pip, which every environment sees; an interpreter
    # without one (Debian's python3 without python3-pip) is what the check stands in for.
    monkeypatch.setattr(pyenv, "_has_pip", lambda python: False)
    env = pyenv.ensure_env(requirements, tmp_path / "venvs", tmp_path / "install.log")
    log = (tmp_path / "install.log").read_text()
    # ensurepip's own output: it installs from the wheel bundled with Python, from a temp folder
    assert "Looking in links: " in log, log
    assert _imports(env, "tsprobe_env").startswith(str(_site(env)))


def test_has_pip_tells_an_interpreter_without_one(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    assert not pyenv._has_pip(str(bare / "bin" / "python"))
    assert pyenv._has_pip(sys.executable)
