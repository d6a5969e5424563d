"""What does running a replica behind trainstack's in-container launcher cost?

The launcher's overhead on a no-op replica and on one printing
200 MB, as a ratio to running the command directly; the goal is at most 1.1x for 200 MB.

Each case runs the same command two ways — directly, and as
`python3 -S trainstack/launcher/launcher.py --hang-timeout=60 -- COMMAND` (how a pod runs it) —
with its standard output where the launcher meets it:
- `pipe`: a pipe this benchmark drains, as a container runtime reads a pod's stdout; the launcher
  moves the command's output through (splice) and watches it for the hang check;
- `file`: a regular file, as a local run's log; the command writes into it directly;
- `pipe+store`: a pipe, with the launcher also shipping the log (`--log-dir`, as a pod of an
  environment with an artifact store does: tee + splice) to a folder on tmpfs (/dev/shm, memory
  as a page cache is before an upload) — the launcher's own cost; direct = `pipe`;
- `pipe+disk`: the same with the folder on this machine's disk: the launcher's cost plus writing
  200 MB to the disk, which the direct command does not do.
The figures are the median and the best of `--repeat` runs of wall time; the ratio is launcher /
direct (best of each: on a shared machine the best is the least disturbed).

Run: .venv/bin/python benchmarks/bench_launcher.py [--repeat 7] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def _times(argv: list[str], where: str, tmp: Path, repeat: int) -> list[float]:
    return [_run(argv, where, tmp) for _ in range(repeat)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    behind = [sys.executable, "-S", str(LAUNCHER), "--hang-timeout=60", "--grace=1"]
    cases = [
        ("no-op", ["true"]),
        (f"{args.megabytes} MB", [sys.executable, "-c", PRINTER.format(megabytes=args.megabytes)]),
    ]
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    print(f"launcher overhead ({args.repeat} runs each, wall time; ratio of the best runs)")
    print(
        f"{'replica':<10} {'stdout':<11} {'direct':>16} {'launcher':>16} {'ratio':>7}"
        "   (median / best)"
    )
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir=shm) as mem:
        places = {"pipe+store": f"{mem}/store", "pipe+disk": f"{tmp}/store"}
        for name, command in cases:
            for where in ("pipe", "file", "pipe+store", "pipe+disk"):
                plain = "file" if where == "file" else "pipe"
                direct = _times(command, plain, Path(tmp), args.repeat)
                extra = [f"--log-dir={places[where]}"] if where in places else []
                launched = _times([*behind, *extra, "--", *command], plain, Path(tmp), args.repeat)
                print(
                    f"{name:<10} {where:<11} "
                    f"{_ms(statistics.median(direct))}/{_ms(min(direct))} "
                    f"{_ms(statistics.median(launched))}/{_ms(min(launched))} "
                    f"{min(launched) / min(direct):>6.2f}x"
                )
                shutil.rmtree(places.get(where, f"{tmp}/none"), ignore_errors=True)
    print("goal: <= 1.10x for the 200 MB replica; a no-op's figure is the launcher's")
    print("interpreter start (python3 -S) against a bare fork+exec of `true`")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:>7.1f}ms"


if __name__ == "__main__":
    main()
