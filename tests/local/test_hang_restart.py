"""Hang detection and restart in place: `faultTolerance.hangTimeout` runs each
replica behind trainstack's in-container launcher (trainstack/launcher/launcher.py, the same file
a pod runs), which restarts a command that sits silent — no output, no metrics, no CPU — at
process level, at most 3 times in a row, and records each restart with reason `hung`.
Before this, a silent replica ran until the run's timeout. Real processes, real signals."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import SANDBOXES, write_run
from trainstack.launcher import FILES, HUNG_EXIT_CODE
from trainstack.registry import Registry, RunStatus

LAUNCHER = Path(__file__).resolve().parents[2] / "trainstack" / "launcher" / "launcher.py"


def _launch(
    tmp_path: Path, *command: str, timeout: float = 0.5, stdout: int | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TRAINSTACK_ROLE": "worker", "TRAINSTACK_REPLICA_INDEX": "1"}
    env.pop("METRICS", None)
    log = open(tmp_path / "out.log", "ab")  # noqa: SIM115 - closed below
    try:
        return subprocess.run(
            [
                sys.executable,
                str(LAUNCHER),
                f"--hang-timeout={timeout}",
                "--grace=1",
                f"--events-dir={tmp_path / 'events'}",
                f"--termination-log={tmp_path / 'termination'}",
                "--",
                *command,
            ],
            env=env,
            stdout=log if stdout is None else stdout,
            stderr=subprocess.STDOUT,
            timeout=120,
            check=False,
        )
    finally:
        log.close()


def _events(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "events" / "worker-1.restarts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _imports(tree: ast.AST) -> set[str]:
    """Top-level names imported, leaving out the `if __package__:` branch (taken only when
    trainstack itself imports the module, never in a pod)."""
    found: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) == "__package__":
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "").split(".")[0])
        todo.extend(ast.iter_child_nodes(node))
    return found


def test_the_launcher_is_standard_library_python_3_8() -> None:
    # It runs under the image's Python, whatever its version and packages: every shipped file
    # parses as Python 3.8 and imports only the standard library and the files shipped with it.
    shipped = {name.removesuffix(".py") for name in FILES}
    for name in FILES:
        tree = ast.parse((LAUNCHER.parent / name).read_text(), feature_version=(3, 8))
        imported = _imports(tree)
        assert imported <= set(sys.stdlib_module_names) | {"__future__"} | shipped, (name, imported)
    assert "logship" in _imports(ast.parse(LAUNCHER.read_text()))


def test_the_launcher_gives_up_after_three_hang_restarts_in_a_row(tmp_path: Path) -> None:
    done = _launch(tmp_path, "sleep", "60", timeout=0.25)  # a sleep never looks busy
    assert done.returncode == HUNG_EXIT_CODE
    events = _events(tmp_path)
    assert [e["event"] for e in events] == ["restart", "restart", "restart", "failed"]
    assert {e["reason"] for e in events} == {"hung"}
    assert events[-1]["hangRestarts"] == 3
    assert (tmp_path / "termination").read_text().startswith("hung: ")
    log = (tmp_path / "out.log").read_text()
    assert log.count("[trainstack] worker-1 hung") == 4


def test_output_and_cpu_are_not_a_hang(tmp_path: Path) -> None:
    # each for over twice the 0.5 s hang timeout
    talk = "i=0; while [ $i -lt 6 ]; do echo tick; sleep 0.2; i=$((i+1)); done"
    assert _launch(tmp_path, "sh", "-c", talk).returncode == 0
    spin = f"{sys.executable} -c 'import time; t=time.time()\nwhile time.time()-t<1.2: pass'"
    assert _launch(tmp_path, "sh", "-c", spin).returncode == 0
    assert not (tmp_path / "events").exists()


def test_through_a_pipe_the_launcher_copies_output_and_passes_exit_codes(tmp_path: Path) -> None:
    # A pod's stdout is a pipe: the launcher copies the command's output through it.
    done = _launch(tmp_path, "sh", "-c", "echo out; echo err >&2; exit 3", stdout=subprocess.PIPE)
    assert done.returncode == 3
    assert done.stdout == b"out\nerr\n"


@pytest.mark.slow  # replicas through the local runner, waiting out a real hang timeout
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_replica_that_hangs_once_is_restarted_in_place_and_recorded_hung(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "stalls-once",
        parameters={"mode": "stall", "steps": 1},
        outputs={"result": f"file://{out}/"},
        faultTolerance={"maxRestarts": 3, "hangTimeout": "5s"},
    )
    done = cli("run", spec, "--local", "--grace", "1", "--sandbox", sandbox)
    assert done.returncode == 0, done.output
    assert (out / "done").read_text() == "attempt 2"
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.SUCCEEDED
    assert record.restarts == 1
    assert [(h.key, h.reason, h.counted) for h in history] == [("worker-0", "hung", False)]
    shown = cli("runs", "show", record.id)
    assert shown.returncode == 0
    (line,) = [x for x in shown.out.splitlines() if x.startswith("restart ")]
    assert "worker-0  hung" in line
    # the HTML report shows the recovery history: a timeline and a table
    page = tmp_path / "report.html"
    assert cli("report", record.id, "-o", page).returncode == 0
    html = page.read_text()
    assert 'id="recovery-timeline"' in html and ">worker-0 hung</span>" in html
    assert "<td>worker-0</td><td>hung</td>" in html


@pytest.mark.slow
def test_a_replica_that_hangs_every_time_fails_after_three_hang_restarts(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(
        tmp_path,
        "probe",
        "stalls-always",
        parameters={"mode": "stall", "steps": 100},
        faultTolerance={"maxRestarts": 3, "hangTimeout": 5},
    )
    done = cli("run", spec, "--local", "--grace", "1")
    assert done.returncode == 1
    assert "hung" in done.stderr and "3 hang restart(s)" in done.stderr, done.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.FAILED
    assert [h.reason for h in history] == ["hung"] * 3


def test_the_command_runs_as_subprocess_would_start_it(tmp_path: Path) -> None:
    # The launcher forks and execs by hand (subprocess's imports were most of its start-up):
    # a session of its own, stdin from /dev/null, SIGPIPE back to its default, no descriptor
    # of the launcher's inherited, stderr in the same stream as stdout.
    probe = (
        "import os, sys\n"
        "print(os.getsid(0) == os.getppid())\n"  # sh exec'd by the launcher leads the session
        "print(sys.stdin.read() == '', sorted(int(f) for f in os.listdir('/proc/self/fd'))[:3])\n"
        "print('to stderr', file=sys.stderr)\n"
    )
    # Python ignores SIGPIPE in itself, so the mask is read by grep, the command's child
    script = f"grep '^SigIgn:' /proc/self/status; {sys.executable} -c \"$0\"; exit $?"
    with open(tmp_path / "held", "wb") as held:  # inheritable in the launcher, not beyond
        os.set_inheritable(held.fileno(), True)
        done = subprocess.run(
            [sys.executable, "-S", str(LAUNCHER), "--", "sh", "-c", script, probe],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            close_fds=False,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stdout
    mask, *lines = done.stdout.decode().splitlines()
    assert int(mask.split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0, mask
    assert lines == ["True", "True [0, 1, 2]", "to stderr"]


def test_a_bad_launcher_line_is_one_usage_error(tmp_path: Path) -> None:
    for argv, said in (
        (["--hang-timeout=soon", "--", "true"], "--hang-timeout: 'soon' is not a float"),
        (["--hang", "--", "true"], "unknown option '--hang'"),
        (["--grace"], "--grace needs a value"),
        (["--grace=1"], "no command given after --"),
    ):
        done = subprocess.run(
            [sys.executable, "-S", str(LAUNCHER), *argv],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and said in done.stderr.decode(), (argv, done.stderr)
        assert b"Traceback" not in done.stderr
    missing = subprocess.run(
        [sys.executable, "-S", str(LAUNCHER), "--", str(tmp_path / "no-such-program")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    # its stderr is the command's: the same stream as stdout
    assert missing.returncode == 127 and b"cannot run" in missing.stdout
