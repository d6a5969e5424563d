"""The built wheel works anywhere: built from the sources, installed into a fresh virtualenv,
and run from a directory outside the repository — validate, render --env, plan --project — with
the job templates it ships (from the repository's top-level templates/) and a platform project's
own templates/ found before them.

The fresh venv gets the already-installed dependencies through a .pth line (so torch and pulumi
are not reinstalled); trainstack itself comes only from the wheel, which the test checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # builds and installs the wheel

REPO = Path(__file__).resolve().parents[1]
COMPONENT = REPO / "components" / "mnist-ddp"
RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {name: mnist-anywhere, tags: {team: vision}}
spec:
  component: ../component.yaml
  parameters: {epochs: 1, optimizer: adam}
  inputs: {train: pvc://datasets/mnist/}
  outputs: {model: pvc://models/mnist/, checkpoints: pvc://models/mnist-ckpt/}
  resources:
    master: {replicas: 1, cpu: 1, memory: 2Gi}
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_validates_renders_and_plans_outside_the_repository(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "TRAINSTACK_PROJECT", "VIRTUAL_ENV")
    }
    env["TRAINSTACK_HOME"] = str(tmp_path / "home")
    # 1. build from a copy of the sources (an in-tree build would leave build/ behind)
    src = tmp_path / "src"
    for folder in ("trainstack", "templates"):
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    dist = tmp_path / "dist"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            str(src),
        ],
        tmp_path,
        env,
    )
    (wheel,) = dist.glob("trainstack-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.name for p in (REPO / "templates").glob("*.j2"))
    assert templates and {f"trainstack/templates/{n}" for n in templates} <= shipped
    assert not any(n.startswith("templates/") for n in shipped)  # no top-level package
    # 2. a fresh venv that sees the installed dependencies, but not this checkout
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    site = Path(
        run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            tmp_path,
            env,
        ).strip()
    )
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ],
        tmp_path,
        env,
    )
    where = run([str(python), "-c", "import trainstack; print(trainstack.__file__)"], tmp_path, env)
    assert Path(where.strip()).is_relative_to(site), "trainstack must come from the wheel"
    # 3. a user's folders: a component and a run, and the platform project, outside the repo
    work = tmp_path / "work"
    shutil.copytree(COMPONENT, work / "mnist-ddp", ignore=shutil.ignore_patterns("runs", "sweeps"))
    (work / "mnist-ddp" / "runs").mkdir()
    run_file = work / "mnist-ddp" / "runs" / "anywhere.yaml"
    run_file.write_text(RUN)
    project = tmp_path / "platform"
    project.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.local.yaml"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(REPO / "platform", project / "platform")  # KubeDL's CRD lock
    # the platform's own partial, before the wheel's: a label on every object
    (project / "templates").mkdir()
    (project / "templates" / "_metadata.yaml.j2").write_text(
        (REPO / "templates" / "_metadata.yaml.j2")
        .read_text()
        .replace("meta.labels | tojson", 'dict(meta.labels, platform="acme") | tojson')
    )
    cli = str(venv / "bin" / "trainstack")
    assert "valid" in run([cli, "validate", "mnist-ddp"], work, env).lower()
    rendered = list(
        yaml.safe_load_all(
            run(
                [cli, "render", str(run_file), "--env", "local", "--project", str(project)],
                work,
                env,
            )
        )
    )
    kinds = sorted(d["kind"] for d in rendered)
    assert "PyTorchJob" in kinds and "ConfigMap" in kinds
    assert {d["metadata"]["namespace"] for d in rendered} == {"vision"}
    assert {d["metadata"]["labels"]["platform"] for d in rendered} == {"acme"}
    plan = run(
        [cli, "plan", str(run_file), "--env", "local", "--project", str(project), "--json"],
        work,
        env,
    )
    assert '"stack": "local.vision.mnist-anywhere"' in plan
    assert '"replaced": [\n      "_metadata.yaml.j2"\n    ]' in plan
    assert not (work / "build").exists() and not (REPO / "build").exists()
