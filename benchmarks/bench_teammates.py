"""A teammate's lookups in a crowded backend: CLI processes and wall time, against the per-stack
lookup trainstack made before the backend's run index (``trainstack/deploy/backendindex.py``).

The CLI is a recording stand-in of ``pulumi``: a shell script, one process per call as the real
one is, that logs its arguments and answers ``stack ls``, ``stack tag ls`` and ``stack output``
from files (no backend, so the figures count processes, not a backend's latency: against S3 or
Pulumi Cloud each call also waits on the network). For 10, 100 and 1,000 run stacks, two cases:

- `status`: every run in the backend (``trainstack status`` with no run);
- `teammate`: one run a teammate deployed (``status/logs/wait/destroy RUN`` without it in
  ``stacks.json``).

baseline: ``stack ls`` then ``stack tag ls`` per stack, as ``backend_entries`` did before the
index; ratio = baseline / indexed (calls and seconds). Target: a handful of calls at 1,000 stacks.

Run: .venv/bin/python benchmarks/bench_teammates.py [--stacks 10,100,1000]
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pulumi.automation import PulumiCommand

from trainstack.deploy.index import StackEntry, entry_from_tags
from trainstack.deploy.service import deployed, locate
from trainstack.deploy.settings import load_settings
from trainstack.deploy.workspace import runs_workspace

FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "{state}/calls.log"
[ "$1" = --non-interactive ] && shift
stack=""
for arg; do [ "$prev" = --stack ] && stack=$arg; prev=$arg; done
case "$1 $2 $3" in
  version*) echo v3.272.0 ;;
  "stack ls"*) cat "{state}/ls.json" ;;
  "stack tag ls") cat "{state}/tags/$stack.json" ;;
  "stack output"*) cat "{state}/output-$stack.json" ;;
  *) echo "error: the stand-in does not answer: $*" >&2; exit 1 ;;
esac
"""


def backend(root: Path, n: int) -> PulumiCommand:
    """A stand-in CLI whose backend holds ``n`` run stacks, and their index."""
    state = root / "state"
    (state / "tags").mkdir(parents=True)
    stacks: dict[str, dict[str, str]] = {}
    for i in range(n):
        team = ("vision", "nlp")[i % 2]
        run = f"run-{i:04d}"
        stacks[f"local.{team}.{run}"] = {
            "trainstack:run": run,
            "trainstack:env": "local",
            "trainstack:team": team,
            "trainstack:namespace": team,
            "trainstack:job": run,
            "trainstack:kind": "PyTorchJob",
            "trainstack:component": "mnist-ddp",
            "trainstack:version": "1.0.0",
        }
    for name, tags in stacks.items():
        (state / "tags" / f"{name}.json").write_text(json.dumps(tags))
    (state / "tags" / "trainstack-index.json").write_text("{}")
    names = [*stacks, "trainstack-index"]
    (state / "ls.json").write_text(json.dumps([{"name": s, "current": False} for s in names]))
    (state / "output-trainstack-index.json").write_text(json.dumps({"runs": stacks}))
    script = root / "cli" / "bin" / "pulumi"
    script.parent.mkdir(parents=True)
    script.write_text(FAKE.format(state=state))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return PulumiCommand(root=str(root / "cli"))


def per_stack(home: Path, command: PulumiCommand) -> list[StackEntry]:
    """The lookup before the index: one listing, then each stack's tags."""
    settings = load_settings(home)
    workspace = runs_workspace(settings, command)
    entries = []
    for summary in workspace.list_stacks():
        name = summary.name.rsplit("/", 1)[-1]
        entry = entry_from_tags(name, workspace.list_tags(name), settings.backend_url)
        if entry is not None:
            entries.append(entry)
    return entries


def measure(log: Path, work: Callable[[], object]) -> tuple[int, float]:
    log.write_text("")
    began = time.perf_counter()
    work()
    return len(log.read_text().splitlines()), time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", default="10,100,1000")
    counts = [int(n) for n in parser.parse_args().stacks.split(",")]
    print(f"{'stacks':>6}  {'case':<9} {'calls':>6} {'seconds':>8}  {'baseline':>15}  ratio")
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp:
            for line in rows(Path(tmp), n):
                print(line)


def rows(root: Path, n: int) -> list[str]:
    os.environ["TRAINSTACK_HOME"] = str(root / "home")
    command = backend(root, n)
    home, log = root / "home", root / "state" / "calls.log"
    home.mkdir()
    wanted = f"run-{n // 2:04d}"
    old = measure(log, lambda: per_stack(home, command))
    cases = {
        "status": lambda: deployed(command=command, home=home),
        "teammate": lambda: locate(wanted, command=command, home=home),
    }
    lines = []
    for case, work in cases.items():
        calls, seconds = measure(log, work)
        lines.append(
            f"{n:>6}  {case:<9} {calls:>6} {seconds:>8.3f}  {old[0]:>5} {old[1]:>8.3f}s  "
            f"{old[0] / calls:.0f}x calls, {old[1] / seconds:.0f}x time"
        )
    return lines


if __name__ == "__main__":
    main()
