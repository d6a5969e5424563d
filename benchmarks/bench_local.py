"""How fast does `trainstack run --local` start and end a job? Figures against named baselines,
each measured in the same run, pair by pair (trainstack, then the baseline, N times).

(a) DDP: a 3-replica gloo job (init_process_group, 10 all-reduces of 1000 floats, a barrier,
    destroy) as a PyTorch run of one master and two workers (each `memory: 2Gi`, as the
    mnist-ddp example), `trainstack run RUN.yaml --local`, against the same script under
    `python -m torch.distributed.run --nproc_per_node 3` (a free --master-port, so concurrent
    benchmarks do not collide). Counted: the wall time of the whole command, from its fork to
    its exit: the interpreter, trainstack's imports, the registry, the run directory, the start
    order, every replica's torch import and rendezvous, the tear-down and the summary; for
    torchrun its agent's imports, rendezvous and workers. Target: <= 0.6x.
    The same job in the namespaces sandbox (`--sandbox namespaces`, each replica a pod of its own,
    docs/local.md), measured in the same rounds: against process mode (target: <= 1.1x) and against
    torchrun (target: below it, < 1.0x). (a)'s own figure is process mode.
(b) No-op: a one-replica custom run whose command is `python main.py` with `pass` in main.py,
    against kfp's local runner: `kfp.local.init(runner=kfp.local.SubprocessRunner(use_venv=
    False))` and one no-op lightweight component called once, as one `python` process. Counted:
    the whole command's wall time for both (kfp's includes importing kfp and its executor's
    subprocess). Target: <= 0.25x. kfp cannot share trainstack's environment (kfp 2.17 pins
    kubernetes<31 and protobuf>=6.31; trainstack needs kubernetes>=37 and the test extra's
    pulumi-policy protobuf 5.29), so it runs from its own: --kfp-python, by default
    .venv-kfp/bin/python, made with
        python3 -m venv .venv-kfp && .venv-kfp/bin/pip install -r benchmarks/requirements-kfp.txt
    Without it, (b) says so and prints trainstack's figure alone.
(c) Throughput (--throughput): a replica writes 200 MB of 100-byte lines to stdout; the writer's
    own throughput under the runner against `sh -c '… > file'`. Target: <= 1.3x.

(d) Sandbox set-up per replica (--only setup, or with ddp): `true` run as a pod of the job
    (its file system with /ml and /etc/hosts, namespaces, veth pair, address, hostname, PID
    namespace) against `true` run plainly, the difference per replica; and the job's own
    namespaces (bridge, the pods' root file system), set up and closed, once per run.
    Target: < 50 ms per replica.

Every figure is a whole process with bytecode caches warm (one warm-up run each; the children
get PYTHONDONTWRITEBYTECODE removed, as a user's shell would not set it). The machine may be
shared: the best and the median of --repeat pairs are both printed; believe a ratio only when
it repeats.

Run: .venv/bin/python benchmarks/bench_local.py [--repeat 7] [--only ddp,noop,setup] [--throughput]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DDP = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1000)
for _ in range(10):
    dist.all_reduce(t)
dist.barrier()
dist.destroy_process_group()
"""
KFP = """\
from kfp import dsl, local

local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root={root!r})


@dsl.component
def noop():
    pass


noop()
"""
WRITER = """\
import sys, time
megabytes, timing = int(sys.argv[1]), sys.argv[2]
line = b"x" * 99 + b"\\n"
chunk = line * 655                  # ~64 KiB: what a buffered stdout hands the kernel
count = megabytes * 1_000_000 // len(chunk)
out = sys.stdout.buffer
started = time.perf_counter()
for _ in range(count):
    out.write(chunk)
out.flush()
elapsed = time.perf_counter() - started
with open(timing, "w") as fh:
    fh.write(f"{elapsed} {count * len(chunk)}")
"""


def _component(
    root: Path, name: str, command: str, files: dict[str, str], *, job_type: str = "custom"
) -> Path:
    comp = root / name
    (comp / "src").mkdir(parents=True)
    for filename, text in files.items():
        (comp / "src" / filename).write_text(text)
    # A JSON string is a valid YAML scalar: the command stays text whatever it contains.
    (comp / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        f"metadata: {{name: {name}, version: 1.0.0, description: benchmark component}}\n"
        f"spec:\n  jobType: {job_type}\n  image: registry.example.com/bench/python:3\n"
        f"  code: ./src\n  command: {json.dumps(command)}\n"
    )
    resources = (
        "  resources:\n"
        "    master: {replicas: 1, cpu: 1, memory: 2Gi}\n"
        "    worker: {replicas: 2, cpu: 1, memory: 2Gi}\n"
        if job_type == "pytorch"
        else ""
    )
    run = root / f"{name}-run.yaml"
    run.write_text(
        f"apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {{name: {name}}}\n"
        f"spec:\n  component: {comp / 'component.yaml'}\n{resources}"
    )
    return run


def _wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    took = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout.decode()[-3000:]}")
    return took


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pairs(
    repeat: int, ours: Callable[[], float], theirs: Callable[[], float]
) -> tuple[list[float], list[float]]:
    a, b = _rounds(repeat, ours, theirs)
    return a, b


def _rounds(repeat: int, *measures: Callable[[], float]) -> tuple[list[float], ...]:
    """Each measure once per round, in turn, after a warm-up round (bytecode, page cache)."""
    for measure in measures:
        measure()
    times: tuple[list[float], ...] = tuple([] for _ in measures)
    for _ in range(repeat):
        for measure, taken in zip(measures, times, strict=True):
            taken.append(measure())
    return times


def _namespaces_refused() -> str | None:
    from trainstack.local import podns

    return podns.probe()


def _sandbox_setup(root: Path, repeat: int) -> None:
    """(d): what making a replica a pod adds to starting it, and the job network's set-up."""
    from trainstack.local import podns
    from trainstack.local.sandbox import Layout

    refused = _namespaces_refused()
    if refused is not None:
        print(f"(d) sandbox set-up not measured: {refused}")
        return
    run_dir = root / "setup-run"
    rounds = max(repeat, 5) * 4
    jobs = []
    for _ in range(rounds):
        started = time.perf_counter()
        podns.JobNamespaces(Layout(run_dir)).close()
        jobs.append(time.perf_counter() - started)
    network = podns.JobNamespaces(Layout(run_dir))
    try:
        plain, pod = _rounds(
            rounds,
            lambda: _spawn(["true"]),
            lambda: _spawn(list(network.wrap(["true"], 0, "bench-worker-0", run_dir))),
        )
    finally:
        network.close()
    per = statistics.median(pod) - statistics.median(plain)
    verdict = "met" if per < 0.05 else "NOT met"
    print(
        f"(d) sandbox set-up: {per * 1000:.1f} ms per replica (a pod's `true` median "
        f"{statistics.median(pod) * 1000:.1f} ms, a plain `true` "
        f"{statistics.median(plain) * 1000:.1f} ms, {rounds} each) [target < 50 ms: {verdict}]; "
        f"the job's namespaces {statistics.median(jobs) * 1000:.1f} ms (set up, closed) per run"
    )


def _spawn(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - started


def _report(
    label: str, ours: list[float], theirs: list[float], baseline: str, target: float
) -> None:
    best = min(ours) / min(theirs)
    median = statistics.median(ours) / statistics.median(theirs)
    print(
        f"{label}: trainstack best {min(ours):.3f} s, median {statistics.median(ours):.3f} s; "
        f"{baseline} best {min(theirs):.3f} s, median {statistics.median(theirs):.3f} s "
        f"({len(ours)} pairs)"
    )
    verdict = "met" if median <= target else "NOT met"
    print(
        f"    ratio: {median:.2f}x of medians, {best:.2f}x of bests "
        f"[target <= {target}x: {verdict}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--only", default="ddp,noop", help="comma-separated: ddp, noop, setup (ddp includes it)"
    )
    parser.add_argument("--kfp-python", type=Path, default=ROOT / ".venv-kfp" / "bin" / "python")
    parser.add_argument("--throughput", action="store_true", help="also figure (c)")
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    only = set(args.only.split(","))

    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {
            "TRAINSTACK_HOME": str(root / "home"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        trainstack = [sys.executable, "-m", "trainstack", "run"]
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

        if "ddp" in only:
            run = _component(root, "ddp", "python ddp.py", {"ddp.py": DDP}, job_type="pytorch")
            src = root / "ddp" / "src"

            def torchrun() -> float:
                return _wall(
                    [
                        sys.executable,
                        "-m",
                        "torch.distributed.run",
                        "--nproc_per_node",
                        "3",
                        "--master-port",
                        str(_free_port()),
                        "ddp.py",
                    ],
                    env,
                    src,
                )

            def local(mode: str) -> Callable[[], float]:
                return lambda: _wall(
                    [*trainstack, str(run), "--local", "--sandbox", mode], env, ROOT
                )

            if _namespaces_refused() is None:
                timed = _rounds(args.repeat, local("processes"), torchrun, local("namespaces"))
                ours, theirs, pods = timed
                _report("(a) 3-replica gloo DDP", ours, theirs, "torchrun --nproc_per_node 3", 0.6)
                _report("(a) sandbox: the same job", pods, ours, "process mode", 1.1)
                _report("(a) sandbox: the same job", pods, theirs, "torchrun", 1.0)
            else:
                ours, theirs = _rounds(args.repeat, local("processes"), torchrun)
                _report("(a) 3-replica gloo DDP", ours, theirs, "torchrun --nproc_per_node 3", 0.6)
                print(f"(a) sandbox not measured: {_namespaces_refused()}")

        if "setup" in only or "ddp" in only:
            _sandbox_setup(root, args.repeat)

        if "noop" in only:
            run = _component(root, "noop", "python main.py", {"main.py": "pass\n"})
            ours_noop = lambda: _wall([*trainstack, str(run), "--local"], env, ROOT)  # noqa: E731
            if args.kfp_python.exists():
                script = root / "kfp_noop.py"
                script.write_text(KFP.format(root=str(root / "kfp-root")))
                kfp_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
                ours, theirs = _pairs(
                    args.repeat,
                    ours_noop,
                    lambda: _wall([str(args.kfp_python), str(script)], kfp_env, root),
                )
                _report("(b) no-op run", ours, theirs, "kfp.local SubprocessRunner", 0.25)
            else:
                ours = [ours_noop() for _ in range(args.repeat + 1)][1:]
                print(
                    f"(b) no-op run: trainstack best {min(ours):.3f} s, median "
                    f"{statistics.median(ours):.3f} s; kfp.local not measured: no "
                    f"{args.kfp_python} (see this file's docstring)"
                )

        if args.throughput:
            _throughput(root, env, trainstack, args.repeat, args.megabytes)


def _throughput(
    root: Path, env: dict[str, str], trainstack: list[str], repeat: int, megabytes: int
) -> None:
    timing = root / "timing.txt"
    run = _component(
        root, "chatty", f"python writer.py {megabytes} {timing}", {"writer.py": WRITER}
    )
    src, direct = root / "chatty" / "src", root / "direct.log"
    direct_cmd = ["sh", "-c", f'"{sys.executable}" writer.py {megabytes} {timing} > {direct}']
    runner_rates, direct_rates = [], []
    for _ in range(repeat):
        # Same footing for both: no earlier 200 MB log left behind, dirty pages written back,
        # so that neither pays for the other's writeback.
        for argv, cwd, rates in (
            ([*trainstack, str(run), "--local"], ROOT, runner_rates),
            (direct_cmd, src, direct_rates),
        ):
            shutil.rmtree(root / "home" / "runs", ignore_errors=True)
            direct.unlink(missing_ok=True)
            os.sync()
            _wall(argv, env, cwd)
            seconds, nbytes = map(float, timing.read_text().split())
            rates.append(nbytes / seconds / 1e6)
    r_rate, d_rate = statistics.median(runner_rates), statistics.median(direct_rates)
    ratio = d_rate / r_rate
    print(
        f"(c) {megabytes} MB to stdout: writer throughput {r_rate:.0f} MB/s under the runner vs "
        f"{d_rate:.0f} MB/s redirected to a file; time ratio {ratio:.2f}x "
        f"[target <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'}]"
    )


if __name__ == "__main__":
    main()
