"""A replica over its memory limit ends as a cluster ends it: the kernel's OOM killer, exit 137,
retried by KubeDL's ExitCode rule; one over its pod's /dev/shm gets SIGBUS, not retried. Real
processes that really hold the memory."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.local.helpers import REPO, SANDBOXES, launch, write_run
from trainstack.local.jobplan import replica_limits
from trainstack.local.memlimit import Limit, MemoryWatch, ReplicaLimits, pss_bytes, shm_limit
from trainstack.local.supervisor import Policy, Supervisor
from trainstack.registry import Registry
from trainstack.registry.model import ReplicaExit, RunStatus
from trainstack.spec import load_run

# A Supervisor driven here runs in a subreaper, as the runner's does (tests/local/conftest.py).
pytestmark = pytest.mark.usefixtures("as_runner")

MiB = 2**20


def limits(memory_mib: int) -> ReplicaLimits:
    return ReplicaLimits(
        memory=Limit(memory_mib * MiB, f"{memory_mib}Mi"), shm=shm_limit(None, "worker")
    )


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_replica_over_its_limit_is_oom_killed_and_retried_as_on_a_cluster(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "greedy",
        parameters={"mode": "memory", "steps": 300, "seconds": 30},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 1, "cpu": 1, "memory": "100Mi"}},
        faultTolerance={"maxRestarts": 1},
    )
    done = cli("run", spec, "--local", "--sandbox", sandbox)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    # killed as it grows (not after holding the memory for 30 s), and retried once: 137 is one
    # of ExitCode's transient codes; the second attempt goes the same way
    assert done.stdout.count("worker-0 OOMKilled:") == 2
    assert "over its memory limit of 100Mi (100 MiB)" in done.stderr
    assert "exit code 137 (SIGKILL), OOMKilled" in done.stderr
    assert "no restarts left (maxRestarts: 1)" in done.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.FAILED and record.restarts == 1
    assert [e.exit_code for e in record.exits] == [137]
    assert "OOMKilled" in record.reason
    assert not (out / "worker-0.txt").exists()


@pytest.mark.slow
def test_a_replica_within_its_limit_runs_to_the_end(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "modest",
        parameters={"mode": "memory", "steps": 50, "seconds": 1.0},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 1, "cpu": 1, "memory": "1Gi"}},
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "worker-0.txt").read_text() == "held 50 MiB"
    assert "OOMKilled" not in done.stdout + done.stderr


@pytest.mark.slow
def test_pages_forked_workers_share_are_counted_once(tmp_path: Path) -> None:
    """Data-loader workers forked after the data is loaded share its pages with their parent;
    a memory cgroup charges them once. Summing resident sizes would count 200 MiB four times
    (over the 400 MiB limit); proportional sizes count it once (under it)."""
    script = tmp_path / "share.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys, time
            data = b"\\1" * (200 * 2**20)
            children = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    time.sleep(1)  # some twenty of the watch's looks
                    os._exit(0)
                children.append(pid)
            open("forked", "w").close()
            for pid in children:
                os.waitpid(pid, 0)
            """
        )
    )
    watch = MemoryWatch({"worker-0": limits(400)}, interval=0.05)
    sup = Supervisor(
        [launch(tmp_path, "worker", 0, f'exec "$PYTHON" {script}')],
        Policy(),
        memory=watch,
    )
    out = sup.run()
    assert out.status is RunStatus.SUCCEEDED, out.reason
    assert out.exits == (ReplicaExit("worker", 0, 0),)
    assert (tmp_path / "forked").exists()


@pytest.mark.slow
def test_the_tree_is_measured_while_it_runs(tmp_path: Path) -> None:
    """The measure itself, against a process holding a known amount."""
    script = tmp_path / "hold.py"
    # Held until the watch kills it (the run's timeout only bounds a broken watch): it used to
    # hold for 3 s and exit 0 if the watch had not looked by then, as on a loaded machine.
    script.write_text(
        'import time\ndata = b"\\1" * (120 * 2**20)\nopen("held", "w").close()\ntime.sleep(300)\n'
    )
    watch = MemoryWatch({"worker-0": limits(100)}, interval=0.05)
    sup = Supervisor(
        [launch(tmp_path, "worker", 0, f'exec "$PYTHON" {script}')],
        Policy(timeout_seconds=120, grace_seconds=1),
        memory=watch,
    )
    out = sup.run()
    assert out.status is RunStatus.FAILED
    assert out.exits == (ReplicaExit("worker", 0, 137),)
    assert "OOMKilled: " in out.reason and "over its memory limit of 100Mi" in out.reason
    used = int(out.reason.split("OOMKilled: ")[1].split(" MiB")[0])
    # over the limit when the watch looked (it may look while the 120 MiB are still being
    # written, just past 100 Mi, which the message shows rounded down), and no more than
    # what is held plus the interpreter
    assert 100 <= used < 200


def test_limits_follow_the_spec_except_for_mpi(tmp_path: Path) -> None:
    probe = write_run(
        tmp_path,
        "probe",
        "limits",
        parameters={"mode": "quick"},
        resources={"worker": {"replicas": 2, "memory": "3Gi", "sharedMemory": "1Gi"}},
    )
    one = ReplicaLimits(memory=Limit(3 * 2**30, "3Gi"), shm=Limit(2**30, "its sharedMemory of 1Gi"))
    assert replica_limits(load_run(probe)) == {"worker-0": one, "worker-1": one}
    # locally MPI's ranks all run under the launcher's mpirun: no one pod's limit fits them
    horovod = sorted((REPO / "components" / "cifar-horovod" / "runs").glob("*.yaml"))[0]
    mpi = load_run(horovod)
    assert mpi.job_type == "mpi" and any(r.memory for r in mpi.resources.values())
    assert replica_limits(mpi) == {}


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_more_dev_shm_than_a_pod_has_ends_the_replica_with_sigbus(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    """No sharedMemory: a pod's /dev/shm is the container runtime's 64 MiB. In the sandbox it is
    a tmpfs of that size, as the runtime's: the kernel's SIGBUS, and the block goes with the
    pod; in processes mode the machine's /dev/shm is watched and the replica killed with it."""
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "sharer",
        parameters={"mode": "shm", "steps": 80, "seconds": 30},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 1, "cpu": 1, "memory": "1Gi"}},
        faultTolerance={"maxRestarts": 2},
    )
    done = cli("run", spec, "--local", "--sandbox", sandbox)
    sizes = _own_block_left(out)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "(not retried)" in done.stderr  # a bus error is not one of ExitCode's codes
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.restarts == 0 and [e.exit_code for e in record.exits] == [135]
    if sandbox == "namespaces":
        assert (
            "worker-0 exited with exit code 135 (SIGBUS), as a page beyond a full /dev/shm "
            "gets: the pod's is the container runtime's default of 64Mi (set "
            "resources.worker.sharedMemory for more) (64 MiB)" in done.stderr
        )
        assert sizes == []  # the block was in the pod's tmpfs, not this machine's
        return
    # killed while it fills the block: somewhere past 64 MiB, at most the 80 it asked for
    found = re.search(
        r"worker-0 exited with exit code 135 \(SIGBUS\), /dev/shm full: (\d+) MiB in use, over "
        r"the container runtime's default of 64Mi \(set resources\.worker\.sharedMemory for "
        r"more\)",
        done.stderr,
    )
    assert found, done.stderr
    assert 64 <= int(found.group(1)) <= 80
    # the block really was in this machine's /dev/shm: the killed replica never unlinked it
    assert sizes == [80 * MiB]


def _own_block_left(result: Path) -> list[int]:
    """The size of the probe's shared-memory block (named in its result folder) if it is left
    in this machine's /dev/shm, which it is then removed from. Only this run's block: under
    `-n auto` another test's replica may hold a block there at the same moment (an 80 MiB one
    was once taken for this run's)."""
    named = result / "shm-0.name"
    if not named.exists():
        return []
    block = Path("/dev/shm") / named.read_text()
    if not block.exists():
        return []
    size = block.stat().st_size
    block.unlink()
    return [size]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_shared_memory_sets_the_size_of_dev_shm(tmp_path: Path, cli: Cli, sandbox: str) -> None:
    out = tmp_path / "result"
    run = {"parameters": {"mode": "shm", "steps": 80, "seconds": 0.5}}
    roomy = write_run(
        tmp_path / "roomy",
        "probe",
        "roomy",
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 1, "memory": "1Gi", "sharedMemory": "128Mi"}},
        **run,
    )
    done = cli("run", roomy, "--local", "--sandbox", sandbox)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "worker-0.txt").read_text() == "shared 80 MiB"
    # Held until the limit ends it: with half a second, a watch that had not looked by then on
    # a loaded machine let the replica finish (the run exited 0)
    tight = write_run(
        tmp_path / "tight",
        "probe",
        "tight",
        outputs={"result": f"file://{tmp_path / 'tight-result'}/"},
        resources={"worker": {"replicas": 1, "memory": "1Gi", "sharedMemory": "16Mi"}},
        parameters={"mode": "shm", "steps": 80, "seconds": 30},
    )
    done = cli("run", tight, "--local", "--sandbox", sandbox)
    _own_block_left(tmp_path / "tight-result")
    assert done.returncode == 1
    if sandbox == "namespaces":
        assert "the pod's is its sharedMemory of 16Mi (16 MiB)" in done.stderr
    else:
        assert "over its sharedMemory of 16Mi (16 MiB)" in done.stderr


def test_pss_is_read_from_smaps_where_there_is_no_rollup(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels before 4.14 have no smaps_rollup; the per-mapping figures add up the same."""
    rolled = pss_bytes(os.getpid())
    real_read = Path.read_text

    def no_rollup(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == "smaps_rollup":
            raise FileNotFoundError(self)
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", no_rollup)
    per_mapping = pss_bytes(os.getpid())
    assert rolled and per_mapping
    assert abs(per_mapping - rolled) < rolled * 0.2  # the process moved on a little meanwhile


def test_a_process_that_exits_between_two_looks_is_not_charged_its_shared_pages() -> None:
    """The tree's resident sizes are read first, its PSS after; a forked worker that exits in
    between has no PSS to read, and its resident size (which counts the pages it shared with
    its parent in full) was charged in its place: a replica within its limit was killed as its
    data-loader workers ended. One that is still running and has no PSS is charged its
    resident size, as before."""
    import psutil

    class Stand:  # a process of the tree, as psutil shows it; its pid has no /proc entry
        pid = 2**22 + 17

        def __init__(self, running: bool) -> None:
            self.running = running

        def memory_info(self) -> object:
            return type("Mem", (), {"rss": 200 * MiB})()

        def is_running(self) -> bool:
            return self.running

        def status(self) -> str:
            return psutil.STATUS_SLEEPING

    watch = MemoryWatch({"worker-0": limits(1)})
    me = psutil.Process()
    own = pss_bytes(me.pid)
    assert own is not None
    gone = watch._memory([me, Stand(running=False)], limit=1)
    assert gone < own + 50 * MiB  # this process's PSS, nothing for the one that is gone
    alive = watch._memory([me, Stand(running=True)], limit=1)
    assert alive >= 200 * MiB  # no PSS to read: its resident size stands in


def test_one_look_over_the_limit_is_not_a_kill_two_in_a_row_are() -> None:
    """The tree's PSS is read process by process, so a look taken while workers fork can count
    shared pages more than once; memory a replica really holds is still held at the next look.
    Scripted looks stand in for the tree's reads (the real reads are the test above)."""

    class Scripted(MemoryWatch):
        def __init__(self, looks: list[int]) -> None:
            super().__init__({"worker-0": limits(400)}, interval=0)
            self.looks = looks

        def _tree(self, pid: int) -> list[Any]:
            import psutil

            return [psutil.Process()]

        def _memory(self, tree: list[Any], limit: int) -> int:
            return self.looks.pop(0) * MiB

        def look(self) -> list[Any]:
            self._next = 0.0  # each call a look: the interval is the supervisor's business
            return self.check({"worker-0": 1})

    blip = Scripted([569, 250, 250])
    assert [blip.look() for _ in range(3)] == [[], [], []]
    held = Scripted([569, 450, 450, 450])
    first, second, third, fourth = (held.look() for _ in range(4))
    assert first == [] and [o.used for o in second] == [450 * MiB]
    # once reported, the next replica in its place (recreated) needs two looks of its own
    assert third == [] and [o.used for o in fourth] == [450 * MiB]
