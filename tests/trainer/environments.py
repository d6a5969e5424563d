"""A platform project for tests, with the repository's environments: `local` and `ack-dev` on
KubeDL, `local-trainer` (local's cluster on Kubeflow Trainer, `trainstack:operator: trainer`)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAINER_ENV = "local-trainer"


def trainer_project(folder: Path) -> Path:
    """`folder` made a platform project: Pulumi.yaml, platform/ and the shipped environments."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    # The locks only, as a fresh checkout has them: CRD files mirrored here (never committed)
    # stay out of tests.
    shutil.copytree(REPO / "platform", folder / "platform", ignore=shutil.ignore_patterns("*.yaml"))
    for env in ("local", "ack-dev", TRAINER_ENV):
        shutil.copy(REPO / f"Pulumi.{env}.yaml", folder / f"Pulumi.{env}.yaml")
    return folder
