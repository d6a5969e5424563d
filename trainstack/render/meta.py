"""Labels and annotations: run, component, version, experiment and tags on every object.

Label values must be ≤ 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric; what
does not fit (a long experiment, a tag such as `purpose: "baseline,ablation"`) goes to an
annotation instead, so nothing the user wrote is dropped.
"""

from __future__ import annotations

import json
import re

from trainstack.platformnames import LABEL_PREFIX as PREFIX
from trainstack.platformnames import RUN_LABEL, TAG_PREFIX
from trainstack.spec.model import Run

_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def valid_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_VALUE.fullmatch(value))


def valid_label_name(name: str) -> bool:
    return len(name) <= 63 and bool(_NAME.fullmatch(name))


MANAGED_BY = "app.kubernetes.io/managed-by"


def fixed_labels(labels: dict[str, str]) -> dict[str, str]:
    """The labels of ``labels`` that no change to a run's metadata can change: who manages the
    object, and the run's job (which is in the name of every object that carries these). What a
    PersistentVolume and its claim carry: once a claim binds, kube-controller-manager owns the
    PV's atomic ``spec.claimRef``, and an in-place update for a changed label would re-apply it
    (docs/deploy.md, "What each change does to a deployed run")."""
    return {key: labels[key] for key in (MANAGED_BY, RUN_LABEL) if key in labels}


def labels_and_annotations(run: Run, job: str) -> tuple[dict[str, str], dict[str, str]]:
    comp = run.component
    labels = {
        MANAGED_BY: "trainstack",
        RUN_LABEL: job,
        PREFIX + "component": comp.name,
    }
    annotations = {PREFIX + "run-name": run.name, PREFIX + "component-ref": comp.ref}
    _put(labels, annotations, PREFIX + "component-version", comp.version)
    if run.experiment:
        _put(labels, annotations, PREFIX + "experiment", run.experiment)
    if run.description:
        annotations[PREFIX + "description"] = run.description
    leftover: dict[str, str] = {}
    for key, value in run.tags.items():
        if valid_label_name(key) and valid_label_value(value):
            labels[TAG_PREFIX + key] = value
        else:
            leftover[key] = value
    if leftover:
        annotations[PREFIX + "tags"] = json.dumps(leftover, ensure_ascii=False, sort_keys=True)
    return labels, annotations


def _put(labels: dict[str, str], annotations: dict[str, str], key: str, value: str) -> None:
    (labels if valid_label_value(value) else annotations)[key] = value
