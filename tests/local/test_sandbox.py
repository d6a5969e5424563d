"""`run --local --sandbox`: in namespaces mode each replica is a host of its own, as a pod is
(its address on the job's bridge, its hostname the pod's name, the cluster's names for every
replica, the kind's own port, the launcher as PID 1); processes mode shares this machine's
network. Real processes in real namespaces; `auto` falls back when namespaces cannot be had."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import needs_namespaces, wait_for, write_run
from tests.render.conftest import SPECS
from trainstack.local import podns, procgroup
from trainstack.local.sandboxmode import SandboxMode, choose
from trainstack.registry import Registry, RunRecord, RunStatus
from trainstack.spec import load_run

IRIS = {"master": {"replicas": 1}, "worker": {"replicas": 2}}


def _only_run(home: Path) -> RunRecord:
    with Registry.open(home) as reg:
        (record,) = reg.list()
    return record


@pytest.mark.slow
@needs_namespaces
def test_each_replica_is_its_own_host_reached_by_name_on_the_kinds_port(
    tmp_path: Path, cli: Cli
) -> None:
    """KubeDL's XGBoost iris example: master-0 and worker-0 both start a tracker on
    MASTER_PORT; in the sandbox both binds succeed and the job ends as KubeDL's would."""
    out = tmp_path / "result"
    spec = write_run(
        tmp_path, "tracker", "iris", resources=IRIS, outputs={"result": f"file://{out}/"}
    )
    done = cli("run", spec, "--local", "--sandbox", "namespaces")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _only_run(cli.home).status is RunStatus.SUCCEEDED
    assert "worker-0: tracker on iris-worker-0:9999" in done.stdout
    seen = {
        key: json.loads((out / f"{key}.json").read_text())
        for key in ("master-0", "worker-0", "worker-1")
    }
    addresses = {key: s["address"] for key, s in seen.items()}
    assert len(set(addresses.values())) == 3
    assert all(ipaddress.ip_address(a) in podns.SUBNET for a in addresses.values())
    for key, s in seen.items():
        assert s["hostname"] == f"iris-{key}"
        assert s["env"]["MASTER_ADDR"] == "iris-master-0"
        assert s["env"]["MASTER_PORT"] == "9999"  # XGBoostJob's port, not a free one
        assert s["master_fqdn"] == addresses["master-0"]
        assert s["pid1"].startswith("python3 -S /ml/launcher/launcher.py")  # the pod's PID 1
        # The run directory is the pod's /ml, where the contract's paths point.
        assert s["cwd"] == "/ml/usercode"
        assert s["output"].rstrip("/") == "/ml/output/result"
    heard = json.loads((out / "tracker.json").read_text())
    # The tracker saw each replica come from that replica's own address.
    assert {k: v["peer"] for k, v in heard.items()} == addresses


@pytest.mark.slow
def test_in_processes_mode_the_second_tracker_cannot_bind(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path, "tracker", "iris", resources=IRIS, outputs={"result": f"file://{out}/"}
    )
    done = cli("run", spec, "--local", "--sandbox", "processes")
    assert done.returncode != 0
    assert _only_run(cli.home).status is RunStatus.FAILED
    assert "Address already in use" in done.stdout + done.stderr


@pytest.mark.slow  # torchrun in every replica
@needs_namespaces
def test_torchrun_with_its_default_rendezvous_runs_in_every_replica(
    tmp_path: Path, cli: Cli
) -> None:
    """Kubeflow's elastic echo example: `torchrun --rdzv_backend=c10d` with no endpoint hosts
    its store on localhost:29400 in every pod; each replica is then a world of its own."""
    spec = write_run(
        tmp_path,
        "elasticecho",
        "echo",
        resources={"master": {"replicas": 1}, "worker": {"replicas": 1}},
    )
    done = cli("run", spec, "--local", "--sandbox", "namespaces", "--no-install", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("after init process group, rank=0, world_size=1") == 2


def test_auto_takes_processes_when_namespaces_are_refused_and_says_why() -> None:
    choice = choose(SandboxMode.AUTO, probe=lambda: "the kernel refused new namespaces (EPERM)")
    assert choice.mode is SandboxMode.PROCESSES
    assert choice.describe() == (
        "processes (namespaces unavailable: the kernel refused new namespaces (EPERM))"
    )
    assert choose(SandboxMode.AUTO, probe=lambda: None).mode is SandboxMode.NAMESPACES


@pytest.mark.slow
@needs_namespaces
def test_auto_falls_back_when_the_jobs_namespaces_cannot_be_made(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe passed, but the job's holder could not build the pods' file system (a kernel
    that refuses a tmpfs or pivot_root in a user namespace): `auto` runs processes and says why,
    `--sandbox namespaces` is an error."""

    def refused(self: podns.JobNamespaces, *args: object) -> None:
        raise OSError("could not create the job's namespaces: pod holder: mount: EPERM")

    monkeypatch.setattr(podns.JobNamespaces, "__init__", refused)
    spec = write_run(tmp_path, "probe", "fallback", parameters={"mode": "quick"})
    done = cli("run", spec, "--local", "--no-install", "--sandbox", "auto")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "sandbox:  processes (namespaces unavailable: could not create the job's namespaces: "
        "pod holder: mount: EPERM)" in done.stdout
    )
    asked = cli("run", spec, "--local", "--no-install", "--sandbox", "namespaces")
    assert asked.returncode != 0
    assert "--sandbox namespaces: could not create the job's namespaces" in asked.stderr


def _bin_without_namespace_tools(tmp_path: Path) -> str:
    """A PATH with what a replica runs here (sh, python) but none of the sandbox's tools."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (
        ("sh", "/bin/sh"),
        ("python", sys.executable),
        ("python3", sys.executable),
    ):
        (bin_dir / name).symlink_to(target)
    return str(bin_dir)


@pytest.mark.slow
def test_a_run_on_a_machine_without_the_tools_falls_back_and_says_so(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(tmp_path, "probe", "fallback", parameters={"mode": "quick"})
    cli.env["PATH"] = _bin_without_namespace_tools(tmp_path)
    done = cli("run", spec, "--local", "--no-install", "--sandbox", "auto")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sandbox:  processes (namespaces unavailable: unshare, nsenter" in done.stdout
    asked = cli("run", spec, "--local", "--no-install", "--sandbox", "namespaces")
    assert asked.returncode != 0
    # (pivot_root and ip may still be found in the sbin directories, which are searched too)
    assert "--sandbox namespaces: unshare, nsenter, setpriv" in asked.stderr
    assert "not found (Debian packages: " in asked.stderr
    assert "--sandbox processes" in asked.stderr


@pytest.mark.slow
@needs_namespaces
@pytest.mark.subprocess
def test_nothing_a_replica_started_outlives_its_pod(tmp_path: Path, cli: Cli) -> None:
    """A stray that leaves its session and clears its environment still dies with the pod's
    PID 1 (pid_namespaces(7)), found here by a marker in its command line."""
    marker = f"stray-{os.getpid()}-{tmp_path.name}"
    component = tmp_path / "strayer"
    (component / "src").mkdir(parents=True)
    (component / "src" / "main.py").write_text(
        "import subprocess, sys\n"
        "subprocess.Popen(['setsid', 'env', '-i', sys.executable, '-c',"
        f" 'import time; time.sleep(600)', {marker!r}], start_new_session=True)\n"
    )
    (component / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        "metadata: {name: strayer, version: 1.0.0}\n"
        "spec: {jobType: custom, image: registry.example.com/x:1, code: ./src,"
        " command: python main.py}\n"
    )
    spec = write_run(tmp_path, component / "component.yaml", "stray")
    done = cli("run", spec, "--local", "--no-install", "--sandbox", "namespaces")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _pids_with(marker) == []


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.slow
@needs_namespaces
def test_runner_and_sidecar_killed_together_leave_no_pod_process(tmp_path: Path, cli: Cli) -> None:
    """With the runner gone, the kernel kills each pod's unshare (PR_SET_PDEATHSIG), which
    sends PID 1 SIGTERM; PID 1's end ends the pod (pid_namespaces(7))."""
    spec = write_run(tmp_path, "probe", "orphaned", parameters={"mode": "hang"})
    proc = cli.start("run", spec, "--local", "--no-install", "--sandbox", "namespaces")
    tag = ""
    try:
        runs = cli.home / "runs"
        wait_for(
            "the replica's process tree",
            lambda: any(runs.glob("*/output/result/pids-*")) if runs.exists() else False,
        )
        (run_dir,) = runs.iterdir()
        tag = run_dir.name
        assert procgroup.tagged_pids(tag)
        for pid in procgroup.descendants(proc.pid):
            with contextlib.suppress(OSError):
                if b"trainstack.local.deadman" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # Nothing reads the registry here: the pods end by themselves.
        wait_for("every pod process to be gone", lambda: not procgroup.tagged_pids(tag))
    finally:
        if proc.poll() is None:
            proc.kill()
        if tag:
            procgroup.kill_tagged(tag)


def test_every_replica_is_named_as_the_clusters_dns_names_it() -> None:
    """/etc/hosts of the pods: each Service's short, namespaced, `.svc` and fully qualified name
    and the pod's hostname, at that replica's address; a custom run's pods are `<job>-<index>`."""
    run = load_run(SPECS / "xgboost.run.yaml")
    keys = [(role, i) for role, res in run.resources.items() for i in range(res.replicas)]
    topology = podns.PodAddresses().topology(run, keys)
    lines = podns.hosts_file(run, topology, keys).splitlines()
    job, ns = topology.job_name, topology.namespace
    assert lines[2].split() == [
        podns.pod_address(0),
        f"{job}-master-0",
        f"{job}-master-0.{ns}",
        f"{job}-master-0.{ns}.svc",
        f"{job}-master-0.{ns}.svc.cluster.local",
    ]
    assert topology.address("master", 0) == f"{job}-master-0.{ns}.svc:9999"
    custom = load_run(SPECS / "custom.run.yaml")
    role = next(iter(custom.resources))
    custom_topology = podns.PodAddresses().topology(custom, [(role, 0)])
    names = podns.pod_names(custom, custom_topology, role, 0)
    assert names[-1] == f"{custom_topology.job_name}-0"  # the Indexed Job pod's hostname
