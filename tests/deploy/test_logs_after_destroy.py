"""`destroy` keeps a run's data (its PVs are Retain) and the logs its launcher shipped; `logs RUN`
still reads them: the registry keeps where they are, and `logs` falls back to it once the stack
and its index entry are gone. Against the recording Pulumi CLI of test_deploy and a claim store
on disk written by the real launcher (test_logs_after_pods)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import tests.deploy.test_deploy as recording
from tests.clirunner import Cli
from tests.deploy.test_deploy import RecordingPulumi, deploy
from tests.deploy.test_logs_after_pods import STORE_URI, _ship
from trainstack.errors import NotFoundError

home = recording.home


class ShippingPulumi(RecordingPulumi):
    """A run stack whose outputs name where its logs were shipped, as the run program's do."""

    def _answer(self, args: list[str]) -> Any:
        result = super()._answer(args)
        stack = args[args.index("--stack") + 1] if "--stack" in args else ""
        if args[:2] == ["stack", "output"] and stack.startswith("local.vision."):
            import json

            from pulumi.automation import CommandResult

            outputs = {**json.loads(result.stdout), "logs": STORE_URI, "region": "cn-hangzhou"}
            return CommandResult(json.dumps(outputs), "", 0)
        return result


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "claim"
    logs = root / "runs" / "vision" / "mnist-baseline-01" / "logs"
    _ship(logs, "master", 0, "echo 'rank 0 ready'; echo 'epoch 1 loss 0.9'")
    _ship(logs, "worker", 0, "echo 'rank 1 ready'")
    return root


def _destroyed(home: Path, monkeypatch: pytest.MonkeyPatch, *, forget: bool = False) -> None:
    """Deployed, then destroyed; `forget`: the record predates recording the log place."""
    import trainstack.deploy.workspace as workspace
    from trainstack.deploy.service import destroy

    cli = ShippingPulumi()
    entry = deploy(cli, home)
    if forget:
        with sqlite3.connect(home / "registry.db") as db:
            db.execute("UPDATE runs SET log_place = NULL, log_region = NULL")
    destroy("mnist-baseline-01", command=cli, home=home)
    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    assert entry.registry_id is not None


@pytest.mark.parametrize("forget", [False, True], ids=["recorded-at-deploy", "at-destroy"])
def test_logs_after_destroy_are_read_where_the_registry_recorded(
    home: Path, monkeypatch: pytest.MonkeyPatch, store: Path, forget: bool
) -> None:
    _destroyed(home, monkeypatch, forget=forget)
    done = Cli().invoke("logs", "mnist-baseline-01", "--store", str(store))
    assert done.code == 0, done.err
    assert done.out == (
        "master-0 | rank 0 ready\nmaster-0 | epoch 1 loss 0.9\nworker-0 | rank 1 ready\n"
    )
    one = Cli().invoke("logs", "mnist-baseline-01", "--store", str(store), "--role", "worker")
    assert one.out == "rank 1 ready\n", one.err  # one replica: unprefixed


def test_the_registry_keeps_the_log_place_and_region(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.registry import Registry

    _destroyed(home, monkeypatch)
    with Registry.open(home) as registry:
        (record,) = registry.list()
    assert (record.log_place, record.log_region) == (STORE_URI, "cn-hangzhou")


def test_a_destroyed_run_without_a_recorded_place_is_still_not_found(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trainstack.deploy.workspace as workspace
    from trainstack.deploy.service import destroy

    cli = RecordingPulumi()  # its stacks name no log place: nothing was shipped
    deploy(cli, home)
    destroy("mnist-baseline-01", command=cli, home=home)
    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    done = Cli().invoke("logs", "mnist-baseline-01")
    assert done.code != 0 and "Traceback" not in done.err
    with pytest.raises(NotFoundError):
        from trainstack.deploy.service import locate

        locate("mnist-baseline-01", command=cli, home=home)
