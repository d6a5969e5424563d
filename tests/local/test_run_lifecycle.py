"""How local runs end, and what they leave: failure, Ctrl-C, a dead runner, resume, many at once."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import SANDBOXES, host_pids, on_host, pid_alive, wait_for, write_run
from trainstack.local.procgroup import tagged_pids
from trainstack.registry import Registry, RunFilter, RunRecord, RunStatus


def _records(home: Path) -> list[RunRecord]:
    with Registry.open(home) as reg:
        return reg.list()


@pytest.mark.slow
def test_exit_code_1_fails_the_run_without_a_retry(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "fails",
        parameters={"mode": "fail"},
        outputs={"result": f"file://{out}/"},
        faultTolerance={"maxRestarts": 3},
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "failed: worker-0 exited with exit code 1 (not retried)" in done.stderr
    assert (out / "attempts").read_text() == "attempt\n"  # committed although the run failed
    (record,) = _records(cli.home)
    assert record.status is RunStatus.FAILED
    assert record.restarts == 0
    assert [e.exit_code for e in record.exits] == [1]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_ctrl_c_stops_every_replica_and_records_the_run_cancelled(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "hangs",
        parameters={"mode": "hang"},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 2}},
    )
    runner = cli.start("run", spec, "--local", "--grace", "2", "--sandbox", sandbox)
    home_runs = cli.home / "runs"
    wait_for(
        "both replicas to be ready",
        lambda: home_runs.is_dir() and len(list(home_runs.glob("*/output/result/pids-*.txt"))) == 2,
    )
    pid_files = sorted(home_runs.glob("*/output/result/pids-*.txt"))
    pids = [
        pid
        for f in pid_files
        for pid in host_pids(
            [int(p) for p in f.read_text().split()],
            f.parents[2].name,
            f"worker-{f.stem.split('-')[1]}",
        )
    ]
    assert all(pid_alive(p) for p in pids)
    runner.send_signal(signal.SIGINT)  # what Ctrl-C sends the foreground process
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 130, stdout + stderr
    assert [p for p in pids if pid_alive(p)] == []  # children and the setsid'd one too
    (record,) = _records(cli.home)
    assert record.status is RunStatus.CANCELLED
    assert tagged_pids(record.id) == []
    # What the replicas wrote before the stop was committed to the binding.
    assert (out / "partial-0.txt").read_text() == "written before the stop"


@pytest.mark.slow
def test_ctrl_c_does_not_wait_out_the_grace_period_for_exited_replicas(
    tmp_path: Path, cli: Cli
) -> None:
    """Replicas that end on SIGTERM are done: the runner, a child subreaper, must reap what
    re-parented to it, or those zombies keep each replica's process group "alive" and Ctrl-C
    waits the whole grace period (30 s here) before it returns."""
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "prompt-stop",
        parameters={"mode": "hang"},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 2}},
    )
    runner = cli.start("run", spec, "--local", "--grace", "30")
    home_runs = cli.home / "runs"
    wait_for(
        "both replicas to be ready",
        lambda: home_runs.is_dir() and len(list(home_runs.glob("*/output/result/pids-*.txt"))) == 2,
    )
    asked = time.monotonic()
    runner.send_signal(signal.SIGINT)
    stdout, stderr = runner.communicate(timeout=90)
    took = time.monotonic() - asked
    assert runner.returncode == 130, stdout + stderr
    assert took < 20, f"Ctrl-C took {took:.1f} s: the grace period was waited out"


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_killed_runner_leaves_no_replicas_and_its_run_reads_interrupted(
    tmp_path: Path, cli: Cli, sandbox: str
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "orphaned",
        parameters={"mode": "hang"},
        outputs={"result": f"file://{out}/"},
    )
    runner = cli.start("run", spec, "--local", "--grace", "1", "--sandbox", sandbox)
    home_runs = cli.home / "runs"
    wait_for(
        "the replica",
        lambda: home_runs.is_dir() and any(home_runs.glob("*/output/result/pids-0.txt")),
    )
    pids_file = next(home_runs.glob("*/output/result/pids-0.txt"))
    written = [int(p) for p in pids_file.read_text().split()]
    pids = host_pids(written, pids_file.parents[2].name, "worker-0")
    runner.kill()
    runner.communicate()
    wait_for("the orphans to be stopped", lambda: not any(pid_alive(p) for p in pids))
    # The sidecar commits what the job had written to the output's binding.
    wait_for("the outputs to be committed", lambda: (out / "partial-0.txt").exists())
    assert (out / "partial-0.txt").read_text() == "written before the stop"
    shown = cli("runs", "show", "orphaned", "--json")
    assert json.loads(shown.stdout)["run"]["status"] == "interrupted"


@pytest.mark.slow
def test_resume_seeds_preloaded_outputs_from_an_earlier_run(tmp_path: Path, cli: Cli) -> None:
    first = write_run(
        tmp_path, "probe", "count-a", parameters={"mode": "count", "steps": 3, "seconds": 0.01}
    )
    assert cli("run", first, "--local").returncode == 0
    second = write_run(
        tmp_path, "probe", "count-b", parameters={"mode": "count", "steps": 6, "seconds": 0.01}
    )
    done = cli("run", second, "--local", "--resume", "count-a")
    assert done.returncode == 0, done.stderr
    with Registry.open(cli.home) as reg:
        b = reg.resolve("count-b")
    assert b.run_dir is not None
    assert (b.run_dir / "output" / "result" / "started-from").read_text() == "3"
    assert (b.run_dir / "output" / "state" / "count").read_text() == "6"
    assert "counted from 3 to 6" in done.stdout
    # the lineage is recorded and shown: the run it resumed from
    with Registry.open(cli.home) as reg:
        a = reg.resolve("count-a")
    assert b.resumed_from == a.id
    shown = cli("runs", "show", "count-b")
    (line,) = [x for x in shown.stdout.splitlines() if x.startswith("resumed from")]
    assert line.split() == ["resumed", "from", a.id]
    assert (
        json.loads(cli("runs", "show", "count-b", "--json").stdout)["run"]["resumed_from"] == a.id
    )


@pytest.mark.slow
def test_resume_from_a_run_of_another_component_is_refused(tmp_path: Path, cli: Cli) -> None:
    """Its checkpoints are another model's: before, they were copied in without a word."""
    first = write_run(tmp_path, "probe", "other-model", parameters={"mode": "count", "steps": 1})
    assert cli("run", first, "--local").returncode == 0
    second = write_run(tmp_path, "tracker", "mine")
    done = cli("run", second, "--local", "--resume", "other-model")
    assert done.returncode == 2, done.stderr
    assert "is of component 'probe'" in done.stderr and "another model's" in done.stderr
    with Registry.open(cli.home) as reg:
        assert [r.name for r in reg.list(RunFilter())] == ["other-model"]  # nothing started


@pytest.mark.slow
def test_preloaded_output_bound_to_a_directory_is_read_back_and_committed(
    tmp_path: Path, cli: Cli
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "count").write_text("2")
    spec = write_run(
        tmp_path,
        "probe",
        "count-bound",
        outputs={"state": f"file://{state}/"},
        parameters={"mode": "count", "steps": 4, "seconds": 0.01},
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stderr
    assert "counted from 2 to 4" in done.stdout
    assert (state / "count").read_text() == "4"


@pytest.mark.slow
def test_parameter_values_and_paths_arrive_intact_and_unevaluated(tmp_path: Path, cli: Cli) -> None:
    message = "two  words; touch pwned $(touch pwned2) `touch pwned3` \"q\" 'x' * $HOME"
    data = tmp_path / "my data dir"
    data.mkdir()
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "args",
        parameters={"mode": "args", "message": message},
        outputs={"result": f"file://{out}/"},
    )
    done = cli("run", spec, "--local", "--input", f"data={data}")
    assert done.returncode == 0, done.stderr
    seen = json.loads((out / "seen.json").read_text())
    argv = seen["argv"]
    assert argv[argv.index("--message") + 1] == message
    (record,) = _records(cli.home)
    assert record.run_dir is not None
    run_dir = record.run_dir
    assert on_host(argv[argv.index("--data") + 1], run_dir).resolve() == data.resolve()
    assert seen["env"]["PAI_HPS_MESSAGE"] == message
    assert shlex.split(seen["env"]["PAI_USER_ARGS"])[-2:] == ["--message", message]
    cwd = on_host(seen["cwd"], run_dir)
    leaked = [p for root in (run_dir, tmp_path, cwd) for p in root.rglob("pwned*")]
    assert leaked == []


@pytest.mark.slow
def test_several_runs_at_once_keep_the_registry_consistent(tmp_path: Path, cli: Cli) -> None:
    specs = [
        write_run(
            tmp_path,
            "probe",
            f"many-{i}",
            parameters={"mode": "quick"},
            metadata={"tags": {"batch": "b1", "n": str(i)}},
            resources={"worker": {"replicas": 2}},
        )
        for i in range(4)
    ]
    runners = [cli.start("run", spec, "--local") for spec in specs]
    results = [r.communicate(timeout=120) for r in runners]
    failed = [
        (r.returncode, err) for r, (_, err) in zip(runners, results, strict=True) if r.returncode
    ]
    assert not failed, failed  # each failed run's code and stderr
    with Registry.open(cli.home) as reg:
        records = reg.list(RunFilter(tags={"batch": "b1"}))
    assert len(records) == 4 and len({r.id for r in records}) == 4
    assert {r.status for r in records} == {RunStatus.SUCCEEDED}
    for r in records:
        assert r.run_dir is not None
        marks = sorted(p.read_text() for p in (r.run_dir / "output" / "result").glob("*.txt"))
        assert marks == [r.id, r.id]  # each run's replicas wrote into that run's own directory


def test_a_binding_this_machine_cannot_reach_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path,
        "probe",
        "remote",
        parameters={"mode": "quick"},
        inputs={"data": "oss://acme-data/mnist/"},
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "input 'data' is bound to oss://acme-data/mnist/" in done.stderr
    assert "--input data=PATH" in done.stderr
    assert _records(cli.home) == []  # nothing started, nothing recorded

    typo = cli("run", spec, "--local", "--input", "dta=/tmp")
    assert typo.returncode == 2
    assert "Did you mean 'data'?" in typo.stderr


@pytest.mark.slow
def test_requirements_are_installed_into_a_cached_environment(tmp_path: Path, cli: Cli) -> None:
    import shutil
    import zipfile

    from tests.local.helpers import COMPONENTS

    comp = tmp_path / "withreqs"
    shutil.copytree(COMPONENTS / "probe", comp)
    wheel = comp / "src" / "tsprobe_extra-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:  # a real wheel, installable offline
        zf.writestr("tsprobe_extra.py", "VALUE = 'from the requirements'\n")
        info = "tsprobe_extra-0.1.dist-info"
        zf.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: tsprobe-extra\nVersion: 0.1\n"
        )
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    (comp / "src" / "requirements.txt").write_text(f"./{wheel.name}\n")
    (comp / "src" / "probe.py").write_text(
        "import tsprobe_extra, torch, sys\nprint(tsprobe_extra.VALUE, sys.prefix)\n"
    )
    spec = write_run(tmp_path, comp, "reqs", parameters={"mode": "quick"})
    first = cli("run", spec, "--local", timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "from the requirements" in first.stdout
    second = cli("run", spec, "--local")
    assert second.returncode == 0
    envs = [p for p in (cli.home / "venvs").iterdir() if p.is_dir()]
    assert len(envs) == 1  # built once, reused
    # with no pip of its own: the parent's pip installed into it (ensurepip is ~7 s of a build)
    site = envs[0] / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert (site / "tsprobe_extra.py").is_file() and not list(site.glob("pip*"))
    skipped = cli("run", spec, "--local", "--no-install")
    assert skipped.returncode == 1
    with Registry.open(cli.home) as reg:
        latest = reg.resolve("reqs")
    assert latest.run_dir is not None
    log = (latest.run_dir / "logs" / "worker-0.log").read_text()
    assert "No module named 'tsprobe_extra'" in log
