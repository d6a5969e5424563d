"""Shared helpers for the local-runner tests (no mocks: these start real processes)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trainstack.local.launch import ReplicaLaunch

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll until `predicate` holds; the timeout only bounds a hung test, it asserts no speed."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def launch(tmp: Path, role: str, index: int, command: str, **env: str) -> ReplicaLaunch:
    return ReplicaLaunch(
        role=role,
        index=index,
        argv=("sh", "-c", command),
        env={**os.environ, "PYTHON": sys.executable, **env},
        cwd=tmp,
        log_path=tmp / "logs" / f"{role}-{index}.log",
    )


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rfind(")") + 2 :].startswith("Z")


COMPONENTS = FIXTURES / "components"


def write_run(
    directory: Path,
    component: str | Path,
    name: str,
    metadata: dict[str, object] | None = None,
    **spec: object,
) -> Path:
    """A Run spec file in `directory` for a fixture component (or a component.yaml path)."""
    import yaml

    comp = Path(component) if "/" in str(component) else COMPONENTS / str(component)
    path = comp if comp.suffix == ".yaml" else comp / "component.yaml"
    doc = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": name, **(metadata or {})},
        "spec": {"component": str(path), **spec},
    }
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{name}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def _kernel_refuses_namespaces() -> str | None:
    """Why the kernel will not give a replica namespaces (None: it will). Missing tools are
    not a reason: README's test command installs them (tools/install-sandbox), so without them
    the sandbox's tests run and fail, saying which are missing, rather than skip."""
    from trainstack.local import podns

    return None if podns.missing_tools() else podns.probe()


NAMESPACES_REFUSED = _kernel_refuses_namespaces()
# For tests of the namespaces sandbox: a kernel that refuses them (user namespaces turned off,
# a seccomp profile) runs processes mode only.
needs_namespaces = pytest.mark.skipif(
    NAMESPACES_REFUSED is not None, reason=f"no namespaces here: {NAMESPACES_REFUSED}"
)
# Both sandbox modes, as a test's `sandbox` parameter.
SANDBOXES = [
    pytest.param("processes"),
    pytest.param("namespaces", marks=needs_namespaces),
]


def host_pids(written: list[int], run_id: str, key: str) -> list[int]:
    """This machine's pids of the processes replica `key` of run `run_id` wrote down as its own
    (while they are alive): the same numbers in processes mode; in the sandbox, pids of the
    pod's PID namespace, translated through each tagged process's NSpid (proc(5))."""
    from trainstack.local.procgroup import REPLICA_TAG_ENV, replica_tag, tagged_pids

    levels: dict[int, list[int]] = {}
    for pid in tagged_pids(replica_tag(run_id, key), name=REPLICA_TAG_ENV):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("NSpid:"):
                    levels[pid] = [int(n) for n in line.split()[1:]]
    # The pod's own processes are the deepest; the unshare that waits for its PID 1 is not.
    depth = max((len(ns) for ns in levels.values()), default=1)
    inside = {ns[-1]: pid for pid, ns in levels.items() if len(ns) == depth}
    missing = [p for p in written if p not in inside]
    assert not missing, f"{key} wrote pids {missing} that none of its processes has"
    return [inside[p] for p in written]


def on_host(seen: str, run_dir: Path) -> Path:
    """A path as a replica named it, on this machine: in the sandbox a pod sees its run directory
    at /ml; in processes mode the path is this machine's already."""
    path = Path(seen)
    return run_dir / path.relative_to("/ml") if path.is_relative_to("/ml") else path
