"""Replica logs rotated at a configurable size, read back whole by `logs` and `report`; a full
disk fails the run with a message instead of crashing the runner."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.errors import ConfigError
from trainstack.local.logcap import LogLimits, chain, rotate, rotation
from trainstack.registry import Registry, RunStatus

MiB = 1 << 20


def _spew_component(root: Path) -> Path:
    """A component that writes `--mb` MiB of numbered lines, then `done`."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "spew.py").write_text(
        textwrap.dedent("""\
        import argparse, sys, time
        p = argparse.ArgumentParser()
        p.add_argument("--mb", type=int)
        mb = p.parse_args().mb
        line = 0
        pad = "x" * 100
        for _ in range(mb * 8):  # 128 KiB per burst
            sys.stdout.write("".join(f"line {line + i:09d} {pad}\\n" for i in range(1130)))
            sys.stdout.flush()
            line += 1130
            time.sleep(0.01)
        print("done", flush=True)
        """)
    )
    (root / "component.yaml").write_text(
        textwrap.dedent("""\
        apiVersion: trainstack.dev/v1
        kind: Component
        metadata: {name: spew, version: 1.0.0}
        spec:
          jobType: custom
          image: registry.example.com/test/python:3
          code: ./src
          command: python spew.py $PAI_USER_ARGS
          parameters:
            - {name: mb, type: Int}
        """)
    )
    return root / "component.yaml"


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^(?:\S+ \| )?line (\d{9}) ", text, re.M)]


@pytest.mark.slow
def test_logs_rotate_at_the_limit_and_read_back_in_order(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, _spew_component(tmp_path / "spew"), "spewing", parameters={"mb": 12})
    cli.env.update({"TRAINSTACK_LOG_MAX_BYTES": str(MiB), "TRAINSTACK_LOG_KEEP": "2"})
    result = cli("run", spec, "--local", "--no-install", timeout=180)
    assert result.returncode == 0, result.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.run_dir is not None
    (log,) = (record.run_dir / "logs").glob("*-0.log")
    parts = chain(log)
    assert parts == [rotation(log, 2), rotation(log, 1), log]
    assert not rotation(log, 3).exists()
    # 12 MiB were written; what is kept is bounded by the limit (plus one check's writes).
    assert sum(p.stat().st_size for p in parts) < 6 * MiB
    assert all(p.stat().st_size < 3 * MiB for p in parts)

    whole = cli("logs", record.id)
    assert whole.returncode == 0, whole.stderr
    numbers = _numbers(whole.stdout)
    assert numbers and numbers == sorted(numbers), "rotations read out of order"
    assert numbers[0] > 0, "the oldest lines are gone, as the limit asked"
    assert whole.stdout.rstrip().endswith("done")

    tailed = cli("logs", record.id, "--tail", "3000")
    assert tailed.returncode == 0, tailed.stderr
    tail_numbers = _numbers(tailed.stdout)
    assert len(tail_numbers) == 2999 and tail_numbers == sorted(tail_numbers)

    html = tmp_path / "report.html"
    report = cli("report", record.id, "-o", html)
    assert report.returncode == 0, report.stderr
    assert "done" in html.read_text()


def test_rotation_without_keeping_caps_the_log(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_bytes(b"a\n" * 600)
    assert rotate(log, LogLimits(max_bytes=1000, keep=0))
    assert log.stat().st_size == 0 and chain(log) == [log]
    log.write_bytes(b"b\n" * 100)
    assert not rotate(log, LogLimits(max_bytes=1000, keep=0))


@pytest.mark.parametrize("raw", ["-1", "1e6", "lots", "9" * 30])
def test_bad_limits_are_one_clear_error(raw: str, tmp_path: Path, cli: Cli) -> None:
    with pytest.raises(ConfigError, match="TRAINSTACK_LOG_MAX_BYTES"):
        LogLimits.from_env({"TRAINSTACK_LOG_MAX_BYTES": raw})
    spec = write_run(tmp_path, _spew_component(tmp_path / "spew"), "badlimit", parameters={"mb": 1})
    cli.env["TRAINSTACK_LOG_MAX_BYTES"] = raw
    result = cli("run", spec, "--local", "--no-install")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "TRAINSTACK_LOG_MAX_BYTES" in result.stderr


@contextlib.contextmanager
def _small_disk(where: Path, size: int) -> Iterator[dict[str, object]]:
    """A small file system at `where`: a tmpfs as root; otherwise the runner's RLIMIT_FSIZE
    (the same write error, EFBIG instead of ENOSPC, for every file it or a replica writes)."""
    where.mkdir()
    if os.geteuid() == 0:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True
        )
        try:
            yield {}
        finally:
            subprocess.run(["umount", "-l", str(where)], check=True)
    else:

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

        yield {"preexec_fn": limit}


@pytest.mark.slow
def test_a_full_disk_fails_the_run_with_a_message(tmp_path: Path) -> None:
    spec = write_run(tmp_path, _spew_component(tmp_path / "spew"), "filler", parameters={"mb": 64})
    with _small_disk(tmp_path / "disk", 8 * MiB) as extra:
        cli = Cli(tmp_path / "disk" / "home")
        cli.env["TRAINSTACK_LOG_MAX_BYTES"] = "0"  # no cap: the replica fills the disk
        result = cli("run", spec, "--local", "--no-install", timeout=180, **extra)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert "ran out of space" in result.stderr, result.stderr
        listed = cli("runs", "list")
        assert listed.returncode == 0, listed.stderr
        assert "filler" in listed.stdout and "failed" in listed.stdout, listed.stdout
        with Registry.open(cli.home) as reg:
            (record,) = reg.list()
        assert record.status is RunStatus.FAILED
        assert record.reason is not None and "ran out of space" in record.reason
        assert record.run_dir is not None
        assert not (record.run_dir / ".trainstack-reserve").exists()
