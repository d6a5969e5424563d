"""How much does `trainstack run --local` cost? Two figures, each against a named baseline.

(a) Overhead: wall time of `trainstack run NOOP.yaml --local` (a one-replica component whose
    command is `true`; subprocess, median of several) minus the wall time of `sh -c true`.
    Target: under 0.5 s added.
(b) Throughput: a replica writes 200 MB of 100-byte lines to stdout. The writer times itself;
    its throughput under the runner as a ratio to the same command run with `sh -c '… > file'`
    (and the same for end-to-end wall time net of (a)'s fixed costs). Target: <= 1.3x.

Run: .venv/bin/python benchmarks/bench_local.py [--repeat 5] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {{name: {name}, version: 1.0.0, description: benchmark component}}
spec:
  jobType: custom
  image: registry.example.com/bench/python:3
  code: ./src
  command: {command_yaml}
  outputs:
    - {{name: result}}
"""
RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {{name: {name}}}
spec:
  component: {component}
  outputs: {{result: "file://{result}/"}}
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


def _component(root: Path, name: str, command: str) -> Path:
    comp = root / name
    (comp / "src").mkdir(parents=True)
    (comp / "src" / "writer.py").write_text(WRITER)
    # A JSON string is a valid YAML scalar: the command stays text whatever it contains.
    (comp / "component.yaml").write_text(
        COMPONENT.format(name=name, command_yaml=json.dumps(command))
    )
    run = root / f"{name}-run.yaml"
    run.write_text(
        RUN.format(name=name, component=comp / "component.yaml", result=root / f"{name}-result")
    )
    return run


def _wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def _clean(runs: Path, direct_log: Path) -> None:
    shutil.rmtree(runs, ignore_errors=True)
    direct_log.unlink(missing_ok=True)
    os.sync()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        root = Path(tmp)
        env = dict(
            os.environ,
            TRAINSTACK_HOME=str(root / "home"),
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        )
        trainstack = [sys.executable, "-m", "trainstack", "run"]

        # (a) overhead
        noop = _component(root, "noop", "true")
        _wall([*trainstack, str(noop), "--local"], env, ROOT)  # warm caches once
        runner_noop = [
            _wall([*trainstack, str(noop), "--local"], env, ROOT) for _ in range(args.repeat)
        ]
        sh_noop = [_wall(["sh", "-c", "true"], env, ROOT) for _ in range(args.repeat)]
        added = statistics.median(runner_noop) - statistics.median(sh_noop)
        print(
            f"(a) no-op run: trainstack run --local {statistics.median(runner_noop):.3f} s, "
            f"sh -c true {statistics.median(sh_noop) * 1000:.1f} ms "
            f"(medians of {args.repeat}); added {added:.3f} s "
            f"[target < 0.5 s: {'met' if added < 0.5 else 'NOT met'}]"
        )

        # (b) 200 MB to stdout
        timing = root / "timing.txt"
        command = f"python writer.py {args.megabytes} {timing}"
        chatty = _component(root, "chatty", command)
        src = root / "chatty" / "src"
        direct_cmd = [
            "sh",
            "-c",
            f'"{sys.executable}" writer.py {args.megabytes} {timing} > {root / "direct.log"}',
        ]
        runner_rates, direct_rates, runner_walls, direct_walls = [], [], [], []
        for _ in range(args.repeat):
            # Same footing for both: no earlier 200 MB log left behind, dirty pages written
            # back, so that neither pays for the other's writeback (the kernel throttles writers
            # once enough dirty data piles up).
            _clean(root / "home" / "runs", root / "direct.log")
            runner_walls.append(_wall([*trainstack, str(chatty), "--local"], env, ROOT))
            seconds, nbytes = map(float, timing.read_text().split())
            runner_rates.append(nbytes / seconds / 1e6)
            _clean(root / "home" / "runs", root / "direct.log")
            direct_walls.append(_wall(direct_cmd, env, src))
            seconds, nbytes = map(float, timing.read_text().split())
            direct_rates.append(nbytes / seconds / 1e6)
        r_rate, d_rate = statistics.median(runner_rates), statistics.median(direct_rates)
        ratio = d_rate / r_rate
        net_runner = statistics.median(runner_walls) - statistics.median(runner_noop)
        net_direct = statistics.median(direct_walls) - statistics.median(sh_noop)
        print(
            f"(b) {args.megabytes} MB to stdout: writer throughput {r_rate:.0f} MB/s under "
            f"the runner vs {d_rate:.0f} MB/s redirected to a file; time ratio "
            f"{ratio:.2f}x [target <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'}]"
        )
        print(
            f"    end to end: runner {statistics.median(runner_walls):.3f} s vs redirect "
            f"{statistics.median(direct_walls):.3f} s; net of the no-op costs "
            f"{net_runner:.3f} s vs {net_direct:.3f} s = {net_runner / net_direct:.2f}x"
        )


if __name__ == "__main__":
    main()
