"""What does keeping a replica's memory and /dev/shm limits cost a local run?

The supervisor asks `memlimit.MemoryWatch.check` once per interval (0.2 s) for every live
replica. This measures one check of a job shaped like a DDP run with data-loader workers: three
replicas, each a parent holding `--megabytes` MiB with `--workers` forked children, and prints
the time of one check as a share of the interval it runs in (the baseline: the supervisor's own
loop time between checks). It has no target; the figure says what the guard costs.

Run: .venv/bin/python benchmarks/bench_memlimit.py [--replicas 3] [--workers 4] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainstack.local.memlimit import (  # noqa: E402
    INTERVAL_S,
    Limit,
    MemoryWatch,
    ReplicaLimits,
    pss_bytes,
    shm_limit,
)

REPLICA = """\
import os, sys, time
data = b"\\1" * ({megabytes} * 2**20)
for _ in range({workers}):
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
print("ready", flush=True)
time.sleep(600)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--checks", type=int, default=50)
    args = parser.parse_args()
    code = REPLICA.format(megabytes=args.megabytes, workers=args.workers)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
        )
        for _ in range(args.replicas)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
        live = {f"worker-{i}": p.pid for i, p in enumerate(procs)}
        tree = [procs[0].pid, *(c.pid for c in psutil.Process(procs[0].pid).children())]
        pss = sum(pss_bytes(pid) or 0 for pid in tree)
        rss = sum(psutil.Process(pid).memory_info().rss for pid in tree)
        print(
            f"{args.replicas} replicas x (1 + {args.workers} forked workers) holding "
            f"{args.megabytes} MiB: per replica {pss / 2**20:.0f} MiB PSS, "
            f"{rss / 2**20:.0f} MiB summed RSS"
        )
        cases = {
            "well within the limit (summed RSS below it: PSS not read)": 64 * 2**30,
            "near the limit (summed RSS above it: PSS read)": (pss + rss) // 2,
        }
        for case, limit in cases.items():
            limits = ReplicaLimits(Limit(limit, "bench"), shm_limit(None, "worker"))
            times = []
            for _ in range(args.checks):
                # a fresh watch per check: a watch spaces its own checks out by their cost
                watch = MemoryWatch(dict.fromkeys(live, limits), interval=INTERVAL_S)
                start = time.perf_counter()
                over = watch.check(live)
                times.append(time.perf_counter() - start)
                assert not over
            check = statistics.median(times)
            share = check / max(INTERVAL_S, 20 * check)
            print(
                f"  {case}: one check {check * 1e3:.2f} ms (median of {args.checks}); "
                f"checks every {max(INTERVAL_S, 20 * check):.2f} s, {share:.1%} of one core "
                f"(baseline: the {INTERVAL_S:g} s interval)"
            )
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


if __name__ == "__main__":
    main()
