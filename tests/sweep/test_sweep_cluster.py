"""`trainstack sweep --env ENV`: trials deployed as run stacks through the deploy service,
against the recording stand-in of the Pulumi CLI the deploy tests use; the cluster's job states
come from a stand-in watcher and each trial's metrics from a local directory laid out as the
artifact store (`<store>/<team>/<run>/_metrics/`). Not exercised here: a real cluster's job
states and reading oss:// or a PVC (that needs the store mounted; see docs/sweeps.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.deploy.test_deploy import PLATFORM_OUTPUTS, RecordingPulumi
from tests.spec.clirun import trainstack
from trainstack.deploy.index import StackEntry
from trainstack.deploy.jobstate import Outcome
from trainstack.registry import Registry, RunFilter, RunKind, RunStatus

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"
# The platform exports its artifact store: where each run's $METRICS is copied (docs/deploy.md).
PLATFORM = {**PLATFORM_OUTPUTS, "artifactStore": "pvc://trainstack-artifacts/"}


class StandInCluster:
    """Each job runs for one check and then succeeds, its `$METRICS` written to the store with
    accuracy = lr (x10 for adam), the way the run program's artifacts would land there."""

    def __init__(self, home: Path, store: Path, interrupt_after: int | None = None) -> None:
        self.home, self.store = home, store
        self.checks: dict[str, int] = {}
        self.live: set[str] = set()
        self.peak = 0
        self.interrupt_after = interrupt_after

    def outcome(self, entry: StackEntry) -> Outcome:
        self.live.add(entry.run)
        self.peak = max(self.peak, len(self.live))
        n = self.checks[entry.run] = self.checks.get(entry.run, 0) + 1
        if self.interrupt_after is not None and sum(self.checks.values()) > self.interrupt_after:
            raise KeyboardInterrupt  # as Ctrl-C arriving while the sweep reads the cluster
        if n < 2:
            return Outcome.RUNNING
        spec = yaml.safe_load(
            (
                self.home / "sweeps" / "mnist-lr-optimizer" / "trials" / f"{entry.run}.yaml"
            ).read_text()
        )
        params = spec["spec"]["parameters"]
        accuracy = params["lr"] * (10 if params["optimizer"] == "adam" else 1)
        metrics = self.store / "vision" / entry.run / "_metrics"
        metrics.mkdir(parents=True)
        (metrics / "metrics.json").write_text(
            json.dumps(
                {
                    "id": entry.run,
                    "metas": [{"name": "epoch", "x": "epoch", "ys": ["loss", "accuracy"]}],
                }
            )
        )
        (metrics / "epoch.csv").write_text(
            f"epoch,loss,accuracy\n1,2.0,{accuracy / 2}\n2,1.0,{accuracy}\n"
        )
        self.live.discard(entry.run)
        return Outcome.SUCCEEDED


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("TRAINSTACK_BACKEND_URL", raising=False)
    return tmp_path / "home"


def test_trials_deploy_as_run_stacks_two_at_a_time_scored_from_the_store(
    home: Path, tmp_path: Path
) -> None:
    from trainstack.sweep import service

    cli = RecordingPulumi(platform=PLATFORM)
    cluster = StandInCluster(home, tmp_path / "store")
    done = service.run(
        EXAMPLE,
        home,
        local=False,
        env="local",
        artifacts=tmp_path / "store",
        command=cli,
        watcher=cluster,
        watch_interval=0,
    )
    ups = [c for c in cli.calls if c[0] == "up"]
    stacks = [c[c.index("--stack") + 1] for c in ups]
    assert sorted(stacks) == [f"local.team-vision.mnist-lr-optimizer-t00{i}" for i in range(4)]
    assert cluster.peak == 2  # the concurrency cap, reached
    assert done.best is not None and done.best.params == {"lr": 0.01, "optimizer": "adam"}
    assert done.best.value == pytest.approx(0.1)
    with Registry.open(home) as reg:
        runs = reg.list(RunFilter(tags={"sweep": "mnist-lr-optimizer"}))
    assert len(runs) == 4 and all(r.kind is RunKind.CLUSTER for r in runs)
    assert all(r.experiment == "mnist-lr-optimizer" and r.stack_name for r in runs)
    assert {(r.parameters["lr"], r.parameters["optimizer"]) for r in runs} == {
        (0.01, "adam"),
        (0.01, "sgd"),
        (0.001, "adam"),
        (0.001, "sgd"),
    }
    assert done.best.run_id in {r.id for r in runs}


def test_ctrl_c_destroys_the_stacks_of_running_trials(home: Path, tmp_path: Path) -> None:
    from trainstack.sweep import service

    cli = RecordingPulumi(platform=PLATFORM)
    cluster = StandInCluster(home, tmp_path / "store", interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):
        service.run(
            EXAMPLE,
            home,
            local=False,
            env="local",
            artifacts=tmp_path / "store",
            command=cli,
            watcher=cluster,
            watch_interval=0,
        )
    destroyed = [c[c.index("--stack") + 1] for c in cli.calls if c[0] == "destroy"]
    assert sorted(destroyed) == [
        "local.team-vision.mnist-lr-optimizer-t000",
        "local.team-vision.mnist-lr-optimizer-t001",
    ]
    with Registry.open(home) as reg:
        runs = reg.list(RunFilter(tags={"sweep": "mnist-lr-optimizer"}))
    assert {r.status for r in runs} == {RunStatus.CANCELLED}


def test_env_without_a_store_directory_says_what_to_mount(home: Path) -> None:
    res = trainstack("sweep", EXAMPLE, "--env", "local", "--home", home)
    assert res.code == 2 and "--env needs --artifacts DIR" in res.err


def test_plan_shows_the_stacks_of_the_first_batch() -> None:
    res = trainstack("plan", EXAMPLE, "--env", "local", "--json", timeout=300)
    assert res.code == 0, res.err
    plans = json.loads(res.out)
    assert [p["stack"] for p in plans] == [
        "local.vision.mnist-lr-optimizer-t000",
        "local.vision.mnist-lr-optimizer-t001",
    ]
    for p in plans:
        kinds = {r["type"] for r in p["plan"]["resources"]}
        assert "kubernetes:training.kubedl.io/v1alpha1:PyTorchJob" in kinds
        assert set(p["params"]) == {"lr", "optimizer"}
