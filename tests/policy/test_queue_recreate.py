"""queue-recreate (advisory): on a queued environment that runs no finalizer releaser yet, a
KubeDL job whose replicas KubeDL recreates after a failure is noted before deploy, since the
recreated replica never rejoins its Kueue pod group (docs/queues.md); where the releaser runs,
or on an environment without queues, nothing is said."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.clirunner import Cli

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "components/mnist-ddp/runs/baseline.yaml"  # faultTolerance: ExitCode replicas


RELEASER_IMAGE = (
    "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com/acme/python@sha256:" + "3" * 64
)


def _project(folder: Path, *, queues: bool, releaser: bool = False) -> Path:
    folder.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    shutil.copytree(REPO / "platform", folder / "platform", ignore=shutil.ignore_patterns("*.yaml"))
    text = (REPO / "Pulumi.ack-dev.yaml").read_text()
    if not queues:  # every kueue:* key, with the lines its value goes on over
        kept, skipping = [], False
        for line in text.splitlines(keepends=True):
            if line.startswith("  ") and not line.startswith("   "):
                skipping = line.startswith("  kueue:")
            if not skipping:
                kept.append(line)
        text = "".join(kept)
    if releaser:
        text += f"  kueue:releaserImage: {RELEASER_IMAGE}\n"
    (folder / "Pulumi.ack-dev.yaml").write_text(text)
    return folder


def test_a_recreating_kubedl_job_on_a_queued_environment_is_noted(tmp_path: Path, cli: Cli) -> None:
    queued = _project(tmp_path / "queued", queues=True)
    done = cli("policy", "check", str(BASELINE), "--env", "ack-dev", "--project", str(queued))
    assert done.code == 0, done.err  # advisory
    text = done.out + done.err
    assert "[advisory] queue-recreate" in text
    assert "spec.pytorchReplicaSpecs.Worker.restartPolicy" in text
    assert "never rejoins its Kueue pod group" in text


def test_without_queues_nothing_is_said(tmp_path: Path, cli: Cli) -> None:
    plain = _project(tmp_path / "plain", queues=False)
    done = cli("policy", "check", str(BASELINE), "--env", "ack-dev", "--project", str(plain))
    assert done.code == 0, done.err
    assert "queue-recreate" not in done.out + done.err


def test_where_the_releaser_runs_nothing_is_said(tmp_path: Path, cli: Cli) -> None:
    released = _project(tmp_path / "released", queues=True, releaser=True)
    done = cli("policy", "check", str(BASELINE), "--env", "ack-dev", "--project", str(released))
    assert done.code == 0, done.err
    assert "queue-recreate" not in done.out + done.err
