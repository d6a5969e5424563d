"""What does running a replica behind trainstack's in-container launcher cost?

Issue 21 (item 1 and "Done when"): the launcher's overhead on a no-op replica and on one printing
200 MB, as a ratio to running the command directly; the goal is at most 1.1x for 200 MB.

Each case runs the same command two ways — directly, and as
`python3 trainstack/launcher/launcher.py --hang-timeout=60 -- COMMAND` (how a replica with
`faultTolerance.hangTimeout` runs) — with its standard output where the launcher meets it:
- `pipe`: a pipe this benchmark drains, as a container runtime reads a pod's stdout; the launcher
  copies the command's output through (and watches it for the hang check);
- `file`: a regular file, as a local run's log; the command writes into it directly;
- `pipe+store`: a pipe, with the launcher also shipping the log to a store folder
  (`--log-dir`, as a pod of an environment with an artifact store does; direct = `pipe`).
The figures are medians of `--repeat` runs of wall time; the ratio is launcher / direct.

Run: .venv/bin/python benchmarks/bench_launcher.py [--repeat 5] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "trainstack" / "launcher" / "launcher.py"

# 1 KiB lines, written through Python's buffered stdout as a training script's prints are.
PRINTER = """\
import sys
line = b"x" * 1023 + b"\\n"
write = sys.stdout.buffer.write
for _ in range({megabytes} * 1024):
    write(line)
sys.stdout.flush()
"""


def _run(argv: list[str], where: str, tmp: Path) -> float:
    env = {**os.environ, "TRAINSTACK_ROLE": "worker", "TRAINSTACK_REPLICA_INDEX": "0"}
    env.pop("METRICS", None)
    began = time.perf_counter()
    if where == "pipe":
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        assert proc.stdout is not None
        while os.read(proc.stdout.fileno(), 1 << 20):
            pass
        code = proc.wait()
    else:
        with open(tmp / "out.log", "wb") as out:
            code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    took = time.perf_counter() - began
    if code != 0:
        raise SystemExit(f"{argv[:3]}... exited {code}")
    return took


def _median(argv: list[str], where: str, tmp: Path, repeat: int) -> float:
    return statistics.median(_run(argv, where, tmp) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    behind = [sys.executable, str(LAUNCHER), "--hang-timeout=60", "--grace=1", "--"]
    cases = [
        ("no-op", ["true"]),
        (f"{args.megabytes} MB", [sys.executable, "-c", PRINTER.format(megabytes=args.megabytes)]),
    ]
    print(f"launcher overhead (median of {args.repeat} runs, wall time)")
    print(f"{'replica':<10} {'stdout':<10} {'direct':>9} {'launcher':>9} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in cases:
            for where in ("pipe", "file", "pipe+store"):
                plain = "pipe" if where == "pipe+store" else where
                direct = _median(command, plain, Path(tmp), args.repeat)
                extra = [f"--log-dir={tmp}/store"] if where == "pipe+store" else []
                argv = behind[:-1] + extra + ["--"] + command
                launched = _median(argv, plain, Path(tmp), args.repeat)
                print(
                    f"{name:<10} {where:<10} {direct * 1000:>7.1f}ms {launched * 1000:>7.1f}ms "
                    f"{launched / direct:>6.2f}x"
                )
    print("goal: <= 1.10x for the 200 MB replica (issue 21)")


if __name__ == "__main__":
    main()
