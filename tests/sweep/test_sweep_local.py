"""`trainstack sweep --local`: trials are ordinary local runs (real subprocesses, the real
registry and optuna's SQLite storage); Ctrl-C stops every trial and the same command resumes;
the median pruner stops a poor trial while it runs."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.clirunner import Cli
from tests.spec.clirun import trainstack
from tests.sweep.helpers import hold_project
from trainstack.registry import Registry, RunFilter, RunRecord, RunStatus

EXAMPLE = "components/mnist-ddp/sweeps/lr-optimizer.yaml"


def sweep_runs(home: Path, sweep: str) -> list[RunRecord]:
    with Registry.open(home) as reg:
        return reg.list(RunFilter(tags={"sweep": sweep}))


def show(home: Path, name: str) -> dict[str, object]:
    res = trainstack("sweeps", "show", name, "--json", "--home", home)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert isinstance(data, dict)
    return data


def max_overlap(runs: list[RunRecord]) -> int:
    events = sorted(
        [(r.started_at, 1) for r in runs if r.started_at is not None]
        + [(r.finished_at, -1) for r in runs if r.finished_at is not None]
    )
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


@pytest.mark.slow
def test_the_mnist_example_grid_runs_as_four_local_runs_two_at_a_time(tmp_path: Path) -> None:
    from trainstack.metrics import series, values

    home = tmp_path / "home"
    res = trainstack("sweep", EXAMPLE, "--local", "--home", home, timeout=600)
    assert res.code == 0, res.out + res.err
    runs = sweep_runs(home, "mnist-lr-optimizer")
    assert len(runs) == 4 and all(r.status is RunStatus.SUCCEEDED for r in runs)
    assert {(r.parameters["lr"], r.parameters["optimizer"]) for r in runs} == {
        (0.01, "adam"),
        (0.01, "sgd"),
        (0.001, "adam"),
        (0.001, "sgd"),
    }
    assert all(r.experiment == "mnist-lr-optimizer" and r.parameters["epochs"] == 2 for r in runs)
    assert max_overlap(runs) == 2  # the cap, and reached
    # The best trial is the run with the highest last epoch/accuracy, read independently.
    last = {}
    for r in runs:
        assert r.run_dir is not None
        found = values.values(series.read(r.run_dir / "metrics"))
        hit = values.find(found, "epoch/accuracy")
        assert hit is not None and hit.last is not None
        last[r.id] = hit.last
    top = max(last, key=lambda k: last[k])
    assert "best:     trial " in res.out and f"({top}) epoch/accuracy" in res.out
    top_run = next(r for r in runs if r.id == top)
    assert f"lr={top_run.parameters['lr']} optimizer={top_run.parameters['optimizer']}" in res.out
    png = home / "sweeps" / "mnist-lr-optimizer" / "history.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = show(home, "mnist-lr-optimizer")
    assert [t["state"] for t in data["trials"]] == ["complete"] * 4  # type: ignore[union-attr]
    assert data["best"]["run"] == top  # type: ignore[index]
    listed = trainstack("runs", "list", "--experiment", "mnist-lr-optimizer", "--home", home)
    assert sum(r.id in listed.out for r in runs) == 4
    compared = trainstack("runs", "compare", *[r.id for r in runs[:2]], "--home", home)
    assert compared.code == 0 and "param lr" in compared.out and "epoch/accuracy" in compared.out
    shown = trainstack("runs", "show", top, "--home", home)
    assert f"lr={top_run.parameters['lr']}" in shown.out and "sweep=mnist-lr-optimizer" in shown.out
    listing = trainstack("sweeps", "list", "--home", home)
    assert "mnist-lr-optimizer" in listing.out and "4 complete" in listing.out


def _processes_under(home: Path) -> list[psutil.Process]:
    """Trial runners (--home HOME in argv) and replicas (working in HOME/runs/...)."""
    out = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if str(home) in cmd or str(p.info["cwd"] or "").startswith(str(home)):
                out.append(p)
        except psutil.Error:
            continue
    return out


@pytest.mark.slow
def test_ctrl_c_stops_every_trial_and_the_same_command_resumes(tmp_path: Path) -> None:
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [0.1, 0.2, 0.3, 0.4]},
            "objective": {"metric": "curve/loss", "goal": "minimize"},
            "budget": {"trials": 4, "parallel": 2},
        },
    )
    home = tmp_path / "home"
    blocks = tmp_path / "blocks"
    for lr in (0.1, 0.2, 0.3, 0.4):
        (blocks / f"block-{lr}").touch()  # every trial waits until the test lets it end
    argv = ("sweep", spec, "--local", "--home", home)
    proc = Cli(home).start(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def until(want: list[str]) -> list[RunRecord]:
        deadline = time.monotonic() + 180
        states: list[str] = []
        while time.monotonic() < deadline:
            runs = sweep_runs(home, "hold-sweep") if (home / "registry.db").exists() else []
            states = sorted(r.status.value for r in runs)
            if states == want:
                return runs
            assert proc.poll() is None, proc.communicate()[0]
            time.sleep(0.1)
        raise AssertionError(f"trials never reached {want}: {states}")

    try:
        first = until(["running", "running"])
        (blocks / f"block-{first[0].parameters['lr']}").unlink()  # one trial may finish
        runs = until(["running", "running", "succeeded"])
        held = {r.id for r in runs if r.status is RunStatus.RUNNING}
        done = {r.name for r in runs if r.status is RunStatus.SUCCEEDED}
        assert _processes_under(home)  # the held trials are alive now
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # a failed assertion: stop it as a user would
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    assert proc.returncode == 130, out
    assert "Traceback" not in out
    assert "2 running trial(s) stopped; run the same command again to resume" in out
    assert _processes_under(home) == []  # nothing left behind
    runs = sweep_runs(home, "hold-sweep")
    assert {r.id: r.status for r in runs if r.id in held} == dict.fromkeys(
        held, RunStatus.CANCELLED
    )
    trials = show(home, "hold-sweep")["trials"]
    assert sorted(t["state"] for t in trials) == [  # type: ignore[union-attr]
        "complete",
        "interrupted",
        "interrupted",
    ]

    for block in blocks.iterdir():
        block.unlink()
    again = Cli(home)(*argv, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming: 1 trial(s) already run, 2 interrupted trial(s) to run again" in again.stdout
    runs = sweep_runs(home, "hold-sweep")
    names = [r.name for r in runs]
    assert all(names.count(n) == 1 for n in done)  # the finished trial was not rerun
    finished = [r for r in runs if r.status is RunStatus.SUCCEEDED]
    assert sorted(r.parameters["lr"] for r in finished) == [0.1, 0.2, 0.3, 0.4]
    data = show(home, "hold-sweep")
    states = sorted(t["state"] for t in data["trials"])  # type: ignore[union-attr]
    assert states == ["complete"] * 4 + ["interrupted"] * 2
    assert data["best"]["params"]["lr"] == 0.1  # type: ignore[index]


@pytest.mark.slow
def test_the_median_pruner_stops_a_poor_trial_while_it_runs(tmp_path: Path) -> None:
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [1.0, 2.0, 3.0]},
            "objective": {"metric": "curve/loss", "goal": "minimize"},
            "budget": {"parallel": 1},
            "earlyStopping": {"startupTrials": 2, "warmupSteps": 0},
        },
        # Long enough trials that the sweep's polling sees trial 2's first values well before
        # it would end on its own, even on a loaded machine.
        base_params={"steps": 20, "pause": 0.4, "mode": "trial"},
    )
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "--home", home, timeout=300)
    assert res.code == 0, res.out + res.err
    data = show(home, "hold-sweep")
    # loss = trial number + 1: trial 2 is above the median of trials 0 and 1 from step 1
    states = [t["state"] for t in data["trials"]]  # type: ignore[union-attr,index]
    assert states == ["complete", "complete", "pruned"]
    runs = {r.name: r for r in sweep_runs(home, "hold-sweep")}
    first, pruned = runs["hold-sweep-t000"], runs["hold-sweep-t002"]
    assert pruned.status is RunStatus.CANCELLED  # stopped cleanly, not failed
    assert first.duration is not None and pruned.duration is not None
    assert pruned.duration < first.duration
    assert "1 pruned" in res.out


def test_a_trial_without_the_objective_fails_naming_the_metrics_it_has(tmp_path: Path) -> None:
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [0.5]},
            "objective": {"metric": "curve/accuracy", "goal": "maximize"},
        },
    )
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "--home", home, timeout=300)
    # the first trial that succeeds without the objective stops the sweep: a spec error, not
    # a run of bad luck
    assert res.code == 2
    assert "trial 0 failed: lr=0.5 run hold-sweep-t000-" in res.out
    assert "(the run has no values for 'curve/accuracy' (its metrics: curve/loss))" in res.out
    assert "without writing the objective metric 'curve/accuracy'; it wrote: curve/loss" in res.err
    # A changed search space under the same name is another search: refused.
    spec.write_text(spec.read_text().replace("- 0.5", "- 0.25"))
    res = trainstack("sweep", spec, "--local", "--home", home)
    assert res.code == 2 and "already exists with another search space" in res.err


@pytest.mark.slow
def test_a_second_sweep_of_the_same_sweep_is_refused_while_one_runs(tmp_path: Path) -> None:
    spec = hold_project(
        tmp_path,
        {"parameters": {"lr": [0.1]}, "objective": {"metric": "curve/loss", "goal": "minimize"}},
    )
    home = tmp_path / "home"
    (tmp_path / "blocks" / "block-0.1").touch()
    argv = ("sweep", spec, "--local", "--home", home)
    proc = Cli(home).start(*argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (home / "registry.db").exists() or not sweep_runs(home, "hold-sweep"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        second = trainstack("sweep", spec, "--local", "--home", home)
        assert second.code == 2 and "sweep hold-sweep is already running" in second.err
    finally:
        (tmp_path / "blocks" / "block-0.1").unlink()
        assert proc.wait(120) == 0


def test_no_trial_starts_after_the_time_limit(tmp_path: Path) -> None:
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [0.1, 0.2, 0.3]},
            "objective": {"metric": "curve/loss", "goal": "minimize"},
            "budget": {"parallel": 1, "timeout": 1},
        },
        base_params={"pause": 1.5},
    )  # each trial outlasts the limit
    home = tmp_path / "home"
    res = trainstack("sweep", spec, "--local", "--home", home, timeout=300)
    assert res.code == 0, res.out + res.err
    assert [r.status for r in sweep_runs(home, "hold-sweep")] == [RunStatus.SUCCEEDED]
    assert "sweep hold-sweep: 1 complete" in res.out


@pytest.mark.slow
def test_trials_stop_when_the_sweep_process_is_killed(tmp_path: Path) -> None:
    """SIGKILL leaves the sweep no chance to stop its trials: each trial's runner gets SIGINT
    from the kernel (parent-death signal), stops its replicas and records the run cancelled."""
    spec = hold_project(
        tmp_path,
        {
            "parameters": {"lr": [0.1, 0.2]},
            "objective": {"metric": "curve/loss", "goal": "minimize"},
            "budget": {"parallel": 2},
        },
    )
    home = tmp_path / "home"
    for lr in (0.1, 0.2):
        (tmp_path / "blocks" / f"block-{lr}").touch()
    argv = ("sweep", spec, "--local", "--home", home)
    proc = Cli(home).start(*argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while (
            not (home / "registry.db").exists()
            or [r.status for r in sweep_runs(home, "hold-sweep")] != [RunStatus.RUNNING] * 2
        ):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 60
    while _processes_under(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_under(home) == []
    assert {r.status for r in sweep_runs(home, "hold-sweep")} == {RunStatus.CANCELLED}
