"""`requirements.txt` in the code directory is installed before the command, as on the platform.

Locally it goes into a virtual environment cached per requirements content (and interpreter),
so the second run with the same requirements starts at once. The environment sees the packages of
the interpreter running trainstack (which stands in for the image's Python): through
`--system-site-packages` for a base interpreter, and through a `.pth` file when trainstack itself
runs in a virtual environment, whose packages `--system-site-packages` would not see.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import IO

from trainstack.errors import UserError

_READY = ".trainstack-ready"


class RequirementsError(UserError):
    """Installing the component's requirements failed."""


def requirements_file(usercode: Path) -> Path | None:
    """The code's requirements.txt when it names at least one requirement."""
    path = usercode / "requirements.txt"
    if not path.is_file():
        return None
    lines = (line.split("#", 1)[0].strip() for line in read_requirements(path).splitlines())
    return path if any(lines) else None


def read_requirements(path: Path) -> str:
    """requirements.txt as pip reads it (UTF-8), or one error that says where it is not."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise RequirementsError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x})",
            hint="save requirements.txt as UTF-8, as pip expects",
        ) from None


def ensure_env(requirements: Path, cache: Path, log_path: Path) -> Path:
    """The cached environment for these requirements, built first if needed."""
    digest = hashlib.sha256()
    for part in (sys.executable, sys.version, read_requirements(requirements)):
        digest.update(part.encode() + b"\0")
    env_dir = cache / digest.hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{env_dir.name}.lock", "w") as lock:
        # Two runs needing the same environment: one builds, the other waits and reuses it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env_dir / _READY).exists():
            return env_dir
        shutil.rmtree(env_dir, ignore_errors=True)
        try:
            _build(env_dir, requirements, log_path)
        except BaseException:
            shutil.rmtree(env_dir, ignore_errors=True)
            raise
        (env_dir / _READY).write_text(read_requirements(requirements), encoding="utf-8")
    return env_dir


def env_overrides(env_dir: Path, base_path: str) -> dict[str, str]:
    return {
        "VIRTUAL_ENV": str(env_dir),
        "PATH": os.pathsep.join(p for p in (str(env_dir / "bin"), base_path) if p),
    }


def _build(env_dir: Path, requirements: Path, log_path: Path) -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"[trainstack] installing {requirements} into {env_dir}\n".encode())
        log.flush()
        # Without a pip of its own (venv's ensurepip is ~7 s of the ~10 s a build took): the
        # environment sees the parent's packages, pip among them, and a pip runs for the
        # interpreter that starts it, so it installs here. Where the parent has no pip (a
        # uv-made environment), the environment gets its own, as before.
        _step(
            [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(env_dir)],
            log,
            log_path,
            requirements.parent,
        )
        if sys.prefix != sys.base_prefix:
            site = env_dir / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
            parent = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
            (site / "site-packages" / "_trainstack_parent_env.pth").write_text(
                "".join(f"{p}\n" for p in sorted(parent))
            )
        python = str(env_dir / "bin" / "python")
        if not _has_pip(python):
            _step([python, "-m", "ensurepip"], log, log_path, requirements.parent)
        _step(
            [
                python,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "-r",
                str(requirements),
            ],
            log,
            log_path,
            requirements.parent,
        )


def _has_pip(python: str) -> bool:
    found = subprocess.run(
        [python, "-c", "import importlib.util, sys; sys.exit(not importlib.util.find_spec('pip'))"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return found.returncode == 0


def _step(argv: list[str], log: IO[bytes], log_path: Path, cwd: Path) -> None:
    done = subprocess.run(
        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, check=False
    )
    if done.returncode != 0:
        raise RequirementsError(
            f"installing requirements failed ({' '.join(argv[-3:])} exited {done.returncode})",
            hint=f"see {log_path}; or pass --no-install to use the packages already installed",
        )
