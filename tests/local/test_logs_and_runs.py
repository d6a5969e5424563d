"""`trainstack logs` and `trainstack runs list|show` against real runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import wait_for, write_run
from trainstack.errors import UserError
from trainstack.humanize import parse_since
from trainstack.logtail import Tail, last_lines


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """Two finished runs in a home of their own; the tests that take it only read them."""
    tmp_path = tmp_path_factory.mktemp("two-runs")
    cli = Cli(tmp_path / "home")
    # Long enough (about 1 s) for the usage sampler's first look.
    ok = write_run(
        tmp_path,
        "probe",
        "counts",
        parameters={"mode": "count", "steps": 3, "seconds": 0.3},
        metadata={"experiment": "exp-a", "tags": {"team": "vision"}},
        resources={"worker": {"replicas": 2}},
    )
    bad = write_run(
        tmp_path, "probe", "breaks", parameters={"mode": "fail"}, metadata={"experiment": "exp-b"}
    )
    assert cli("run", ok, "--local").returncode == 0
    assert cli("run", bad, "--local").returncode == 1
    return cli


@pytest.mark.slow
def test_runs_list_filters(two_runs: Cli) -> None:
    def names(*args: str) -> list[str]:
        done = two_runs("runs", "list", "--json", *args)
        assert done.returncode == 0, done.stderr
        return sorted(r["name"] for r in json.loads(done.stdout))

    assert names() == ["breaks", "counts"]
    assert names("--status", "failed") == ["breaks"]
    assert names("--experiment", "exp-a") == ["counts"]
    assert names("--tag", "team=vision") == ["counts"]
    assert names("--name", "breaks") == ["breaks"]
    assert names("--since", "1h") == ["breaks", "counts"]
    assert names("--since", "2999-01-01") == []
    table = two_runs("runs", "list")
    assert table.stdout.splitlines()[0].split() == [
        "ID",
        "STATUS",
        "COMPONENT",
        "EXPERIMENT",
        "CREATED",
        "DURATION",
        "RESTARTS",
    ]
    assert len(table.stdout.splitlines()) == 3
    bad = two_runs("runs", "list", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "expected a duration" in bad.stderr


@pytest.mark.slow
def test_runs_show_says_where_everything_is(two_runs: Cli) -> None:
    text = two_runs("runs", "show", "counts").stdout
    assert "status      succeeded" in text
    assert "replica     worker-0: exit 0" in text and "replica     worker-1: exit 0" in text
    assert "logs/worker-1.log" in text
    assert "usage       worker-0: CPU" in text
    details = json.loads(two_runs("runs", "show", "counts", "--json").stdout)
    outputs = {o["channel"]: o for o in details["outputs"]}
    assert outputs["state"]["files"] == 1 and outputs["state"]["bytes"] == 1  # "3"
    failed = json.loads(two_runs("runs", "show", "breaks", "--json").stdout)["run"]
    assert failed["status"] == "failed" and "exit code 1" in failed["reason"]
    missing = two_runs("runs", "show", "cuonts")
    assert missing.returncode == 2 and "Did you mean 'counts'?" in missing.stderr


def test_logs_select_tail_and_grep(two_runs: Cli) -> None:
    both = two_runs("logs", "counts").stdout.splitlines()
    assert "worker-0 | step 1" in both and "worker-1 | counted from 0 to 3" in both
    one = two_runs("logs", "counts", "--role", "worker", "--index", "1").stdout.splitlines()
    assert one == ["step 1", "step 2", "step 3", "counted from 0 to 3"]
    assert two_runs("logs", "counts", "--tail", "1").stdout.splitlines() == [
        "worker-0 | counted from 0 to 3",
        "worker-1 | counted from 0 to 3",
    ]
    assert (
        two_runs("logs", "counts", "--index", "0", "--grep", r"step [23]").stdout
        == "step 2\nstep 3\n"
    )
    nothing = two_runs("logs", "counts", "--role", "ps")
    assert nothing.returncode == 2 and "replicas: worker-0, worker-1" in nothing.stderr
    bad = two_runs("logs", "counts", "--grep", "(")
    assert bad.returncode == 2 and "not a valid regular expression" in bad.stderr
    assert two_runs.home is not None
    dest = two_runs.home / "downloaded"
    got = two_runs("logs", "counts", "--download", str(dest))
    assert got.returncode == 0, got.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["worker-0.log", "worker-1.log"]
    whole = two_runs("logs", "counts", "--index", "1").stdout.encode()
    assert (dest / "worker-1.log").read_bytes() == whole


def test_system_lines_are_filtered_in_a_runs_log_folder(tmp_path: Path) -> None:
    from trainstack import logview

    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    (logs / "worker-0.log").write_bytes(b"a\n[trainstack] restart 1 of 3\nb\n")
    (logs / "worker-1.log").write_bytes(b"[trainstack] installing requirements\nc\n")
    files = logview.select(logs, None, None)

    def shown(system: bool | None, grep: str | None = None) -> bytes:
        out: list[bytes] = []
        keep = logview.line_filter(logview.compile_grep(grep), system)
        logview.show(files, out.append, keep=keep)
        return b"".join(out)

    assert shown(False) == b"worker-0 | a\nworker-0 | b\nworker-1 | c\n"
    assert shown(True) == (
        b"worker-0 | [trainstack] restart 1 of 3\nworker-1 | [trainstack] installing requirements\n"
    )
    assert shown(True, "restart") == b"worker-0 | [trainstack] restart 1 of 3\n"
    # a merged pod stream is filtered after its `role-index | ` prefix too
    merged: list[bytes] = []
    write = logview.grep_lines(merged.append, logview.line_filter(None, False))
    write(b"master-0 | [trainstack] hung\nmaster-0 | loss 1\n")
    assert merged == [b"master-0 | loss 1\n"]


@pytest.mark.slow
def test_logs_follow_streams_until_the_run_ends(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path, "probe", "slow", parameters={"mode": "count", "steps": 12, "seconds": 0.1}
    )
    runner = cli.start("run", spec, "--local")
    wait_for(
        "the run to be recorded",
        lambda: (
            (cli.home / "runs").is_dir() and any((cli.home / "runs").glob("*/logs/worker-0.log"))
        ),
    )
    follower = cli.start("logs", "slow", "--follow")
    out, err = follower.communicate(timeout=60)
    runner.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert out.splitlines() == [f"step {n}" for n in range(1, 13)] + ["counted from 0 to 12"]


@pytest.mark.parametrize(
    ("tail", "keep", "shown"),
    [
        (None, None, b"one\ntwo\nthree\n"),  # the log as written
        (None, lambda line: True, b"one\ntwo\nthree\n"),  # line by line
        (1, None, b"two\nthree\n"),  # its last line, then what follows
    ],
    ids=["whole", "line-by-line", "tail"],
)
def test_following_shows_a_line_written_while_the_log_is_first_shown_once(
    tmp_path: Path, tail: int | None, keep: object, shown: bytes
) -> None:
    """The log shown first and the tail that follows it meet where the log ended when it was
    looked at: a line the replica wrote in between is shown once. The tail began at the log's
    end as of its own start, and lost such a line (`logs --follow` missed a step under load)."""
    from trainstack import logview

    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    log = logs / "worker-0.log"
    log.write_bytes(b"one\ntwo\n")
    out: list[bytes] = []

    def write(data: bytes) -> None:
        if not out:  # the replica writes while the log is being shown
            with log.open("ab") as fh:
                fh.write(b"three\n")
        out.append(data)

    running = iter([True, False])
    logview.show(
        logview.select(logs, None, None),
        write,
        tail=tail,
        keep=keep,  # type: ignore[arg-type]
        follow=lambda: next(running),
    )
    assert b"".join(out) == shown


def test_tail_skips_ahead_when_far_behind_and_keeps_lines_whole(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "wb") as fh:
        fh.write(b"".join(b"line %07d\n" % i for i in range(200_000)))  # 2.6 MB
    tail = Tail(log, root=tmp_path)
    lines, skipped = tail.poll(budget=4096, skip_beyond=65536)
    assert skipped > 2_000_000
    assert all(line.startswith(b"line ") and len(line) == 12 for line in lines)
    assert lines[-1] == b"line 0199999"
    assert last_lines(log, 3, root=tmp_path) == [b"line 0199997", b"line 0199998", b"line 0199999"]
    with open(log, "ab") as fh:
        fh.write(b"more\npartial")
    assert tail.poll()[0] == [b"more"]
    assert tail.rest() == [b"partial"]


def test_since_accepts_durations_and_dates() -> None:
    now = 1_000_000.0
    assert parse_since("2h", now) == now - 7200
    assert parse_since("30m", now) == now - 1800
    assert parse_since("1.5d", now) == now - 129600
    assert parse_since("2026-11-29") == time.mktime((2026, 11, 29, 0, 0, 0, 0, 0, -1))
    with pytest.raises(UserError):
        parse_since("soon")


@pytest.mark.slow
def test_logs_of_an_unknown_run_says_so_before_asking_for_the_pulumi_cli(
    tmp_path: Path, cli: Cli
) -> None:
    """A mistyped id is not a teammate's deployed run: without the Pulumi CLI (an empty PATH
    here) the error is that no such run is recorded, not that a CLI must be installed."""
    spec = write_run(tmp_path, "probe", "quick", parameters={"mode": "quick", "seconds": 0})
    assert cli("run", spec, "--local", "--no-install").returncode == 0
    (tmp_path / "bin").mkdir()
    done = cli("logs", "quikc", env={"PATH": str(tmp_path / "bin")})
    assert done.returncode == 2 and "Traceback" not in done.err, done.err
    assert "error: no run 'quikc' in" in done.err and "Did you mean 'quick'?" in done.err
    assert "has no such run either" in done.err
    assert "is needed for deploy" not in done.err
