"""A change to a run's metadata never updates a bound PersistentVolume in place.

Once a claim binds, kube-controller-manager owns the PV's whole ``spec.claimRef``
(tests/infra/kubeapi/pv-bound.json, the PV as the API server returns it then).
pulumi-kubernetes v4 updates an object by server-side apply without force, and its apply carries
every field the program registers, ``claimRef`` included: the API server refuses an apply that
sets a field another manager owns to another value (409 Conflict, Kubernetes' "Server-Side
Apply", Conflicts). ``conflicts`` below is that rule, checked against the recording; the run
program runs under Pulumi's mocks (trainstack plan's engine), and an object whose inputs differ
between two deploys is what pulumi-kubernetes would apply in place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from trainstack.plan.engine import PlannedResource, run_program

KUBEAPI = Path(__file__).parent / "kubeapi"
PLATFORM = "organization/trainstack/local"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
APPLIER = "pulumi-kubernetes-6a3e1f0c"  # the field manager in the recording
# core/v1 ObjectReference is `+structType=atomic`: owned, compared and replaced as one value
ATOMIC = {("spec", "claimRef")}
COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {{name: vols, version: {version}}}
spec:
  jobType: custom
  image: registry.example.com/x:1
  command: python main.py
  inputs: [{{name: train}}]
"""
RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {{name: vols, experiment: {experiment}, tags: {{team: nlp, purpose: {purpose}}}}}
spec:
  component: ./component.yaml
  inputs: {{train: 'oss://acme-data/ds/v1/'}}
"""
FIRST = {"version": "1.0.0", "experiment": "first", "purpose": "baseline"}


def owned_paths(fields: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The leaf fields one managedFields entry owns (FieldsV1: ``f:<name>`` keys, ``{}`` leaves)."""
    owned: set[tuple[str, ...]] = set()
    for key, sub in fields.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        owned |= owned_paths(sub, path) if sub else {path}
    return owned


def applied_fields(obj: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple, Any]:
    """The leaf fields an apply of ``obj`` sets, with their values."""
    out: dict[tuple, Any] = {}
    for key, value in obj.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and value and path not in ATOMIC:
            out |= applied_fields(value, path)
        elif value is not None:
            out[path] = value
    return out


def value_at(obj: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return None
        obj = obj[key]
    return obj


def conflicts(live: Mapping[str, Any], apply: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The fields the API server refuses in a non-forced apply of ``apply`` onto ``live``: set to
    another value than live's and owned by another manager."""
    others = {
        path
        for entry in live["metadata"]["managedFields"]
        if entry["manager"] != APPLIER and not entry.get("subresource")
        for path in owned_paths(entry["fieldsV1"])
    }
    body = {k: v for k, v in apply.items() if k not in ("apiVersion", "kind")}
    return sorted(
        path
        for path, value in applied_fields(body).items()
        if path in others and value_at(live, path) != value
    )


def recorded_pv() -> dict[str, Any]:
    return json.loads((KUBEAPI / "pv-bound.json").read_text())


def planned(tmp: Path, **values: str) -> dict[str, PlannedResource]:
    """The run's volume pair as ``pulumi up`` would register it."""
    from trainstack.infra.run.program import build_run
    from trainstack.render import RenderOptions, render_run
    from trainstack.spec import load_run

    tmp.mkdir()
    fields = {**FIRST, **values}
    (tmp / "component.yaml").write_text(COMPONENT.format(**fields))
    (tmp / "run.yaml").write_text(RUN.format(**fields))
    run = load_run(tmp / "run.yaml")
    options = RenderOptions(namespace="nlp", oss_secret="trainstack-oss")
    manifests = render_run(run, options=options)
    plan = run_program(
        lambda: build_run(run, manifests, PLATFORM),
        project="trainstack-runs",
        stack="local.nlp.vols",
        config={},
        secret_keys=frozenset(),
        reads={PLATFORM: {"name": PLATFORM, "outputs": {"kubeconfig": "k"}}},
    )
    return {f"{r.type}::{r.name}": r for r in plan.resources if r.type in (PV, PVC)}


def test_the_recorded_bound_pv_refuses_an_apply_that_carries_the_claim_ref() -> None:
    """The rule and the recording: the PV as trainstack renders it, with one label changed, is
    refused on ``spec.claimRef`` alone (what the controller filled in: uid, kind, ...)."""
    live = recorded_pv()
    rendered = {k: live[k] for k in ("apiVersion", "kind")} | {
        "metadata": {
            "name": live["metadata"]["name"],
            "labels": {**live["metadata"]["labels"], "trainstack.dev/experiment": "second"},
        },
        "spec": {
            **{k: v for k, v in live["spec"].items() if k not in ("claimRef", "volumeMode")},
            "claimRef": {"namespace": "nlp", "name": "vols-in-train-574c746f"},
        },
    }
    assert conflicts(live, rendered) == [("spec", "claimRef")]
    unchanged_ref = {**rendered, "spec": {**rendered["spec"], "claimRef": live["spec"]["claimRef"]}}
    assert conflicts(live, unchanged_ref) == []


@pytest.mark.parametrize(
    "change",
    [{"experiment": "second"}, {"version": "1.0.1"}, {"purpose": "ablation"}],
    ids=["experiment", "component-version", "tag"],
)
def test_a_metadata_change_leaves_the_bound_volume_pair_alone(
    tmp_path: Path, change: dict[str, str]
) -> None:
    before, after = planned(tmp_path / "before"), planned(tmp_path / "after", **change)
    live = recorded_pv()
    pv_key = f"{PV}::persistentvolume-{live['metadata']['name']}"
    assert pv_key in before and set(before) == set(after), "the same pair, by name"
    refused = {
        key: conflicts(live, after[key].inputs)
        for key in after
        if key == pv_key and before[key].inputs != after[key].inputs
    }
    assert refused == {}, "pulumi up would fail with 409 Conflict (kube-controller-manager)"
    for key in after:  # not even an in-place update of the claim: nothing to apply
        assert before[key].inputs == after[key].inputs, key
