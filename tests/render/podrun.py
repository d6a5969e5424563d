"""Run a rendered container here as a pod would run it: its command, args, working directory and
literal env exactly as rendered, as PID 1 of a PID namespace of its own (`unshare --pid --fork`,
in a user namespace so no root is needed where the kernel allows it), with the pod's `/ml` paths
moved under a temporary folder (the only change) and the launcher's files where its ConfigMap
would mount them. No image: the container runs this machine's programs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainstack.render import render_run
from trainstack.spec import load_run


def write_spec(tmp: Path, job_type: str, role: str, files: Mapping[str, str], command: str) -> Path:
    """A one-replica run of a component whose code is ``files`` and whose command is
    ``command``."""
    (tmp / "src").mkdir()
    for name, text in files.items():
        (tmp / "src" / name).write_text(text)
    (tmp / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        "metadata: {name: pod-probe, version: 1.0.0}\n"
        f"spec:\n  jobType: {job_type}\n  image: registry.example.com/acme/python:3.11\n"
        f"  code: ./src\n  command: {command}\n"
    )
    (tmp / "run.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: pod-probe-01}\n"
        "spec:\n  component: ./component.yaml\n"
        f"  resources:\n    {role}: {{cpu: 1, memory: 1Gi}}\n"
    )
    return tmp / "run.yaml"


def main_container(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first replica's main container and the ConfigMaps beside the job."""
    spec = docs[-1]["spec"]
    key = next((k for k in spec if k.endswith("ReplicaSpecs")), None)
    template = next(iter(spec[key].values()))["template"] if key else spec["template"]
    return template["spec"]["containers"][0], [d for d in docs if d["kind"] == "ConfigMap"]


def _unescape(text: str, root: Path) -> str:
    # `$$` is the kubelet's escape for `$`; the pod's /ml tree lives under `root` here.
    return text.replace("$$", "$").replace("/ml/", f"{root}/ml/")


def start_container(
    tmp: Path,
    job_type: str,
    role: str,
    files: Mapping[str, str],
    command: str,
    env: Mapping[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """Render the run, lay out the pod's /ml tree (the code as the prepare init container would
    leave it, every emptyDir as an empty folder anyone may write, as the kubelet makes it) and
    start the main container. Returns the process and ``probe``, a folder the code may write to
    (``$PROBE_DIR``)."""
    docs = render_run(load_run(write_spec(tmp, job_type, role, files, command)))
    container, maps = main_container(docs)
    root = tmp / "pod"
    (root / "ml" / "usercode").mkdir(parents=True)
    for name, text in files.items():
        (root / "ml" / "usercode" / name).write_text(text)
    for mount in container.get("volumeMounts") or ():
        path = Path(_unescape(mount["mountPath"] + "/", root))
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
    for cm in maps:
        if cm["metadata"]["name"].endswith("-trainstack-launcher"):
            for name, text in cm["data"].items():
                (root / "ml" / "launcher" / name).write_text(text)
    probe = tmp / "probe"
    probe.mkdir()
    # The image's python3: this interpreter, found first (the machine's PATH may lead to a
    # version manager's shim, which costs ~0.1 s a start)
    path = os.pathsep.join((os.path.dirname(sys.executable), os.environ["PATH"]))
    full = {"PATH": path, "PROBE_DIR": str(probe), **(env or {})}
    for e in container.get("env") or ():
        if "value" in e and e["value"] is not None:
            full[e["name"]] = _unescape(e["value"], root)
    argv = [_unescape(a, root) for a in [*container["command"], *(container.get("args") or [])]]
    proc = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", *argv],
        cwd=_unescape(container["workingDir"] + "/", root),
        env=full,
        start_new_session=True,
    )
    return proc, probe


def init_of(proc: subprocess.Popen[bytes]) -> int:
    """The PID (in this namespace) of the unshared namespace's init: unshare's one child."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    for _ in range(200):
        found = children.read_text().split()
        if found:
            return int(found[0])
        time.sleep(0.05)
    raise AssertionError("unshare started no child")
