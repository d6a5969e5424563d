"""A platform project for tests, with the repository's environments and `kind-trainer`:
local's settings on Kubeflow Trainer (`trainstack:operator: trainer`)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAINER_ENV = "kind-trainer"


def trainer_project(folder: Path) -> Path:
    """`folder` made a platform project: Pulumi.yaml, platform/, the local and ack-dev
    environments, and `kind-trainer`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    # The locks only, as a fresh checkout has them: CRD files mirrored here (never committed)
    # stay out of tests.
    shutil.copytree(REPO / "platform", folder / "platform", ignore=shutil.ignore_patterns("*.yaml"))
    for env in ("local", "ack-dev"):
        shutil.copy(REPO / f"Pulumi.{env}.yaml", folder / f"Pulumi.{env}.yaml")
    local = (REPO / "Pulumi.local.yaml").read_text()
    (folder / f"Pulumi.{TRAINER_ENV}.yaml").write_text(local + "  trainstack:operator: trainer\n")
    return folder
