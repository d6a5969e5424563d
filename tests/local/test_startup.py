"""What a local run's start-up leaves out: modules a verb does not need stay
unimported, and what replaced them behaves as they did."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from rich.console import Console
from rich.text import Text

from tests.importguard import imported_by
from trainstack.local.console import LiveView
from trainstack.registry.liveness import process_start_time

REPO = Path(__file__).resolve().parents[2]


def _noop_run(tmp_path: Path) -> Path:
    comp = tmp_path / "noop"
    (comp / "src").mkdir(parents=True)
    (comp / "src" / "main.py").write_text("pass\n")
    (comp / "component.yaml").write_text(
        textwrap.dedent("""\
            apiVersion: trainstack.dev/v1
            kind: Component
            metadata: {name: noop, version: 1.0.0, description: a no-op}
            spec:
              jobType: custom
              image: registry.example.com/bench/python:3
              code: ./src
              command: python main.py
        """)
    )
    run = tmp_path / "noop-run.yaml"
    run.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: noop}\n"
        f"spec:\n  component: {comp / 'component.yaml'}\n"
    )
    return run


@pytest.mark.slow
def test_a_run_off_a_terminal_imports_neither_rich_nor_numpy_nor_plotting(tmp_path: Path) -> None:
    heavy = {"rich", "numpy", "matplotlib", "pulumi", "torch", "pulumi_alicloud"}
    imported, out = imported_by(
        ["run", str(_noop_run(tmp_path)), "--local"], heavy, TRAINSTACK_HOME=str(tmp_path / "h")
    )
    assert imported == set()
    # The plain view and the summary still say what they said.
    lines = out.splitlines()
    assert any(line.startswith("[trainstack] run noop-") for line in lines)
    assert any(" succeeded in " in line for line in lines)
    assert any(line.strip().startswith("metrics:") for line in lines)


@pytest.mark.slow
def test_a_short_run_with_usage_samples_ends_without_numpy(tmp_path: Path) -> None:
    """The idle check at a run's end built numpy series of its usage samples: ~0.3 s of every
    run that lived long enough to be sampled, although no stretch shorter than the threshold
    (300 s by default) can be idle. Its samples are read; the series are not built."""
    run = _noop_run(tmp_path)
    (tmp_path / "noop" / "src" / "main.py").write_text("import time\ntime.sleep(1)\n")
    imported, out = imported_by(
        ["run", str(run), "--local"],
        {"numpy"},
        TRAINSTACK_HOME=str(tmp_path / "h"),
        TRAINSTACK_USAGE_SECONDS="0.2",  # a sample every 0.2 s: several in the 1 s
    )
    assert imported == set(), out
    (usage,) = (tmp_path / "h" / "runs").glob("*/usage.jsonl")
    assert len(usage.read_text().splitlines()) >= 2  # it was sampled


def test_plain_event_lines_are_what_rich_printed_off_a_terminal(tmp_path: Path) -> None:
    texts = [
        "run noop-1: noop@1.0.0 (custom), 1 replica(s): worker-0",
        "tab\there\t\tand there",
        "bell\x07 backspace\x08 vt\x0b ff\x0c cr\r and an escape \x1b[31m",
        "  spaces around  ",
        "wide 中文字符 " * 30,
        "two\nlines\twith a tab",
    ]
    log = tmp_path / "logs" / "worker-0.log"
    log.parent.mkdir()
    log.touch()
    ours = io.StringIO()
    view = LiveView({"worker-0": log}, stream=ours)
    for text in texts:
        view.event(text)
    view.stop()
    theirs = io.StringIO()
    console = Console(file=theirs, highlight=False, soft_wrap=True)
    for text in texts:
        console.print(Text(f"[trainstack] {text}", style="bold"))
    assert ours.getvalue() == theirs.getvalue()


def test_a_process_start_time_is_psutils() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for pid in (os.getpid(), child.pid, 1):
            assert process_start_time(pid) == psutil.Process(pid).create_time()
    finally:
        child.kill()
        child.wait()
    assert process_start_time(child.pid) is None  # gone: no start time


def test_the_usage_interval_is_one_second_or_what_the_environment_says(tmp_path: Path) -> None:
    from tests.clirunner import Cli
    from trainstack.errors import ConfigError
    from trainstack.local.usage import interval_from_env

    assert interval_from_env({}) == 1.0
    assert interval_from_env({"TRAINSTACK_USAGE_SECONDS": " 0.2 "}) == 0.2
    for bad in ("soon", "0", "-1", "nan", "1e9"):
        with pytest.raises(ConfigError, match="TRAINSTACK_USAGE_SECONDS"):
            interval_from_env({"TRAINSTACK_USAGE_SECONDS": bad})
    run = _noop_run(tmp_path)
    done = Cli(tmp_path / "h")("run", run, "--local", env={"TRAINSTACK_USAGE_SECONDS": "soon"})
    assert done.code == 2 and "TRAINSTACK_USAGE_SECONDS='soon'" in done.err, done.err
    assert "Traceback" not in done.err
