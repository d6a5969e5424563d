"""What a run directory holds is partly written by the user's code ($METRICS) and partly by
trainstack (usage.jsonl, input/config): a FIFO, a directory or non-UTF-8 bytes where a file is
expected is a reported problem in every verb that reads it, never a hang or a traceback."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run

# A replica that writes a chart's metrics.json and, where its series file belongs, a FIFO
# (someone streaming metrics through a named pipe): reading it would block forever.
FIFO_WRITER = """\
import json, os
out = os.environ["METRICS"]
os.makedirs(out, exist_ok=True)
meta = {"name": "loss", "x": "step", "ys": ["loss"], "series": [], "description": "loss",
        "smooth": "false", "with_timestamp": "false"}
with open(os.path.join(out, "metrics.json"), "w") as f:
    json.dump({"id": "x", "metas": [meta]}, f)
os.mkfifo(os.path.join(out, "loss.csv"))
"""


def _component(tmp: Path) -> Path:
    comp = tmp / "fifo-metrics"
    (comp / "src").mkdir(parents=True)
    (comp / "src" / "main.py").write_text(FIFO_WRITER)
    (comp / "component.yaml").write_text(
        textwrap.dedent(
            """\
            apiVersion: trainstack.dev/v1
            kind: Component
            metadata: {name: fifo-metrics, version: 1.0.0}
            spec:
              jobType: custom
              image: registry.example.com/test/python:3
              code: ./src
              command: python main.py
            """
        )
    )
    return comp / "component.yaml"


def _run(cli: Cli, *args: str | Path, huge: bool = False) -> subprocess.CompletedProcess[str]:
    """In this process; a file of gigabytes is read by a real process under a memory limit, so
    that reading it whole fails instead of swapping."""
    try:
        done = cli(*args, timeout=120, preexec_fn=_limit_memory) if huge else cli(*args, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"trainstack {' '.join(map(str, args))}: hung")
    out = done.out + done.err
    assert "Traceback" not in out, out
    return subprocess.CompletedProcess(args, done.code, done.out, done.err)


def _tmpfs() -> Path | None:
    """/dev/shm where it is a tmpfs (none elsewhere)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    found = any(line.split()[1:3] == ["/dev/shm", "tmpfs"] for line in mounts)
    return Path("/dev/shm") if found and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def cli(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cli]:
    """The shared `cli` (tests/conftest.py), whose home holds the run directory; for a file of
    gigabytes, on a tmpfs where there is one. The verbs read the same 3 GiB of zeros either
    way, but a disk file system's page cache allocates and zeroes a page for each 4 KiB of a
    hole the first time it is read (~7 s of the kernel's time here, and 3 GiB of cache per
    case), where a tmpfs hands out its one zero page."""
    damage = getattr(request.node, "callspec", None)
    huge = damage is not None and DAMAGE[damage.params["damage"]][1] is _huge
    shm = _tmpfs() if huge else None
    if shm is None:
        yield Cli(tmp_path / "home")
        return
    home = Path(tempfile.mkdtemp(prefix="ts-damage-", dir=shm))
    try:
        yield Cli(home / "home")
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def fifo_run(tmp_path: Path, cli: Cli) -> tuple[str, Path]:
    """A finished run whose code left a FIFO as its series file: the run's own summary (which
    reads the metrics) must not hang on it."""
    spec = write_run(tmp_path, _component(tmp_path), "fifo")
    done = _run(cli, "run", spec, "--local", "--no-install")
    assert done.returncode == 0, done.stderr
    assert "loss.csv: cannot be read: a FIFO, not a file" in done.stdout + done.stderr
    [run_dir] = (cli.home / "runs").iterdir()
    return run_dir.name, run_dir


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    (path / "inside").mkdir(parents=True)


def _huge(path: Path) -> None:
    path.unlink(missing_ok=True)  # the series file is a FIFO
    with path.open("wb") as fh:  # sparse: 3 GiB that cost no disk, and no memory unless read
        fh.truncate(3 << 30)


def _limit_memory() -> None:  # reading the whole of a huge file fails instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'{"replica": "worker-0", "t": 1\xff\xfe}\n')


def _wrong_shape(path: Path) -> None:
    # JSON that is not a usage sample: a number, a list, a sample without its fields
    path.write_text('5\n[1, 2]\n{"replica": "worker-0"}\n{"replica": "w", "gpus": 3}\n')


DAMAGE: dict[str, tuple[str, Callable[[Path], None]]] = {
    "metrics.json-fifo": ("metrics/metrics.json", _fifo),
    "metrics.json-directory": ("metrics/metrics.json", _directory),
    "metrics.json-huge": ("metrics/metrics.json", _huge),
    "series-huge": ("metrics/loss.csv", _huge),
    "usage-huge": ("usage.jsonl", _huge),
    "log-huge": ("logs/worker-0.log", _huge),
    "usage-fifo": ("usage.jsonl", _fifo),
    "usage-directory": ("usage.jsonl", _directory),
    "usage-not-utf8": ("usage.jsonl", _not_utf8),
    "usage-wrong-shape": ("usage.jsonl", _wrong_shape),
    "training-job-fifo": ("input/config/training_job.json", _fifo),
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_every_reading_verb_reports_and_goes_on(
    damage: str, fifo_run: tuple[str, Path], cli: Cli, tmp_path: Path
) -> None:
    run_id, run_dir = fifo_run
    where, make = DAMAGE[damage]
    make(run_dir / where)
    for verb in (
        ("runs", "show", run_id),
        ("runs", "compare", run_id, run_id),
        ("metrics", run_id),
        ("metrics", run_id, "--csv", tmp_path / "csv"),
        ("report", run_id, "-o", tmp_path / "report.html"),
    ):
        done = _run(cli, *verb, huge=make is _huge)
        assert done.returncode == 0, (verb, done.stderr)
    shown = _run(cli, "metrics", run_id, huge=make is _huge)
    said = shown.stdout + shown.stderr
    if damage == "metrics.json-huge":
        assert "metrics.json: over 1,048,576 bytes: not a metrics spec" in said
    elif damage == "series-huge":
        assert "loss.csv: over 256 MiB: not read" in said
    elif where == "metrics/metrics.json":
        kind = "a FIFO" if damage.endswith("fifo") else "a directory"
        assert f"metrics.json: cannot be read: {kind}, not a file" in said


def test_the_run_summary_skips_what_is_not_a_usage_sample(tmp_path: Path) -> None:
    """The summary a finished run prints reads usage.jsonl as the charts do: a line that is not
    a sample is skipped; a file that is not a file gives no rows."""
    from trainstack.local.usage import summarize

    usage = tmp_path / "usage.jsonl"
    _wrong_shape(usage)
    with usage.open("a") as f:
        f.write('{"replica": "worker-0", "t": 1, "cpu_percent": 50, "rss_bytes": 10}\n')
    assert [(s.replica, s.samples) for s in summarize(usage)] == [("worker-0", 1)]
    _not_utf8(usage)
    assert summarize(usage) == []
    _directory(usage)
    assert summarize(usage) == []


def test_a_usage_line_nested_too_deep_or_too_long_a_number_is_skipped(tmp_path: Path) -> None:
    """json.loads raised RecursionError (not a ValueError) on a deep line."""
    from trainstack.local.usage import summarize
    from trainstack.metrics import usage as usage_series

    usage = tmp_path / "usage.jsonl"
    usage.write_text(
        "[" * 50_000
        + "\n"
        + '{"replica": "worker-0", "t": 1, "cpu_percent": 50, "rss_bytes": '
        + "9" * 5000
        + "}\n"
        + '{"replica": "worker-0", "t": 1, "cpu_percent": 50, "rss_bytes": 10}\n'
    )
    assert [(s.replica, s.samples) for s in summarize(usage)] == [("worker-0", 1)]
    assert [u.replica for u in usage_series.read(usage)] == ["worker-0"]
