"""Reading a log that is one endless line, against the same bytes in lines.

A progress bar (tqdm, Keras) off a terminal redraws itself with `\r` and never writes `\n`: a
day's training leaves one line of hundreds of megabytes. Each case times `trainstack logs RUN
--grep PATTERN` (a fresh process, as a user runs it, output thrown away) and the console's
search of the same log (trainstack.ui.logs.search, in this process) over a --megabytes log:

- `redraws`: progress-bar redraws separated by `\r` only;
- `no line end`: the same bytes with every `\r` a letter (one line, read in pieces of MAX_LINE);
- baseline: the same bytes with every `\r` a `\n`.

The figure is the best of --repeat wall times; the ratio is case / baseline. Target: at most 2x.

Run: .venv/bin/python benchmarks/bench_logs.py [--megabytes 192] [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trainstack.registry import NewRun, Registry, ReplicaExit, RunStatus
from trainstack.ui import logs as console_logs

PATTERN = "epoch 7 done"  # never in the log: every line is read and none is written


def make_home(root: Path, name: str, body: bytes) -> tuple[Path, str]:
    home = root / name
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name=name, component="bench", component_version="1.0.0"))
        reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
        reg.finish(rec.id, RunStatus.SUCCEEDED)
    logs = home / "runs" / rec.id / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "worker-0.log").write_bytes(body)
    return home, rec.id


def best(repeat: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return min(times)


def cli_grep(home: Path, run: str) -> Callable[[], None]:
    command = [sys.executable, "-m", "trainstack", "logs", run, "--grep", PATTERN, "--home"]

    def work() -> None:
        subprocess.run([*command, str(home)], check=True, stdout=subprocess.DEVNULL)

    return work


def console_search(home: Path, run: str) -> Callable[[], None]:
    def work() -> None:
        with Registry.open(home) as reg:
            record = reg.get(run)
        assert console_logs.search(record, "worker-0", PATTERN).count == 0

    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=192)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bar = b"".join(
        b"\r%3d%%|%-50s| %d/1000 [00:12<00:03, 8.1it/s]" % (i // 10, b"#" * (i // 20), i)
        for i in range(1000)
    )
    redraws = (bar * (args.megabytes * (1 << 20) // len(bar) + 1))[: args.megabytes << 20]
    cases = {
        "redraws": redraws,
        "no line end": redraws.replace(b"\r", b"r"),
        "baseline": redraws.replace(b"\r", b"\n"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        homes = {
            name: make_home(Path(tmp), name.replace(" ", "-"), body) for name, body in cases.items()
        }
        del cases, redraws
        for what, timer in (
            ("trainstack logs --grep", cli_grep),
            ("console search", console_search),
        ):
            seconds = {name: best(args.repeat, timer(*home)) for name, home in homes.items()}
            for name in ("redraws", "no line end"):
                ratio = seconds[name] / seconds["baseline"]
                print(
                    f"{what}, {args.megabytes} MiB, {name}: {seconds[name]:.2f} s against "
                    f"{seconds['baseline']:.2f} s in lines: {ratio:.2f}x (target at most 2x)"
                )


if __name__ == "__main__":
    main()
