"""How long does the test suite take? README's test command's pytest (`python -m pytest -q -n auto`)
run once, reporting pytest's own wall time, the CPU time of the whole process tree (pytest, its
workers and every process they waited for: user + system), and the load average before and
after, since a shared machine's other work inflates the wall time but much less the CPU time.

`--cold` first removes the mypy cache (as a clean clone has none: strict mypy is then the
longest single test). `--root DIR` measures another checkout (say, a worktree of main) with this
interpreter; `-- ARGS` passes ARGS to pytest instead of `-q -n auto` (`-- -q` for one process).

Run: .venv/bin/python benchmarks/bench_suite.py [--cold] [--root DIR] [-- PYTEST ARGS]

Measured on the 2-core CI machine, shared with two other sessions' suites (their load came and
went: load average 0.5-4.5), so the wall times are high and noisy:

                                            pytest wall   tests   CPU (all processes)
  before: main at 13803bc, one process,        2,144 s    2,108   -
    warm mypy cache, load 2-4 (CI today on a
    loaded machine: 1,294 s; quiet: 376-528 s)
  after: in-process CLI, -n 2, load 2-4          1,084 s    2,108   -
    (6311be7, warm mypy cache)
  after: this branch on main at 5c9d5ce,           556 s    2,175   910 s
    -n auto, cold mypy cache (a clean clone),
    load 0.5 at the start, 1.6 at the end
  main at e90718b (the next session: mypy's         445 s    2,296   741 s
    scope, the workflow's runs in two processes,
    requirements environments without ensurepip,
    name references without building the tree),
    -n auto, cold mypy cache, load 1.8 -> 3.0

The in-process CLI alone, the same 149 CLI-heavy tests run serially one after the other on a
quiet machine (load 0.7-1.0; tests/metrics, tests/policy, test_registry_damage, test_init_verb,
without the browser tests): main at 5c9d5ce 198 s (188 s CPU), this branch 76 s (60 s CPU).

At e90718b, the floor: 741 s of CPU on 2 cores is ~370 s of wall at best. Most of it is real
work the suite keeps: real training processes (torch elastic 2 tests, the local sweeps, DDP,
third-party scripts, hang restarts, the README's main job, credit-xgb: each replica imports
torch), a 3 GiB damaged usage.jsonl read six times (~2 s a read), 1,200 property examples, the
platform program built per infra test (~2 s each). Strict mypy cold is now ~37 s of CPU
(tests/test_mypy_scope.py), the workflow's "environment changed" job ~26 s.

Where the time went at 5c9d5ce (that run, per test, seconds): strict mypy with a cold cache 126
(its floor: ~100 s alone on a quiet machine, the longest test, so it is scheduled first), torch
elastic resume 66, the workflow replay's "environment changed" job 63 (every run planned by
three real `trainstack` processes, ~4 s each in Pulumi's imports), usage.jsonl of 3 GiB 40.
Before (the first run, per test file): the local sweeps 239, strict mypy 185, the workflow
replay 168, run-directory damage 154 (a 3 GiB usage.jsonl read through an 8 KiB buffer), the
metrics verbs 123, policy check 94.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="remove the mypy cache first")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("pytest_args", nargs="*", default=["-q", "-n", "auto"])
    args = parser.parse_args()
    root = args.root.resolve()
    if args.cold:
        shutil.rmtree(root / ".mypy_cache", ignore_errors=True)
    load_before = os.getloadavg()
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    reported = re.search(r"in ([\d.]+)s", tail)
    print(f"checkout:        {root}")
    print(f"pytest says:     {tail}")
    print(f"pytest's wall:   {reported.group(1) if reported else '?'} s")
    print(f"command's wall:  {wall:.0f} s (collection and worker start-up included)")
    print(f"CPU, all procs:  {used.ru_utime + used.ru_stime:.0f} s")
    print(f"load average:    {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
