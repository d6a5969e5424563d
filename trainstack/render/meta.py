"""Labels and annotations: run, component, version, experiment and tags on every object.

Label values must be ≤ 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric; what
does not fit (a long experiment, a tag such as `purpose: "baseline,ablation"`) goes to an
annotation instead, so nothing the user wrote is dropped.
"""

from __future__ import annotations

import json
import re

from trainstack.spec.model import Run

PREFIX = "trainstack.dev/"
RUN_LABEL = PREFIX + "run"
ROLE_LABEL = PREFIX + "role"
TAG_PREFIX = "tag.trainstack.dev/"
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def valid_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_VALUE.fullmatch(value))


def valid_label_name(name: str) -> bool:
    return len(name) <= 63 and bool(_NAME.fullmatch(name))


def labels_and_annotations(run: Run, job: str) -> tuple[dict[str, str], dict[str, str]]:
    comp = run.component
    labels = {
        "app.kubernetes.io/managed-by": "trainstack",
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
