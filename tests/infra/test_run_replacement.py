"""A changed oss:// or nas:// binding can be deployed.

A PV's source is immutable, so the renderer names the PV and its claim after what is immutable
(tests/render/test_volume_names.py) and a changed binding is a new pair. Here the run program,
run by ``trainstack plan``'s recording engine (Pulumi's mocks, real resource options), shows how
``pulumi up`` orders that: the new pair is created before the job (the job depends on it), the
job is replaced (deleted first: its name is fixed), and the old pair, gone from the program, is
deleted by Pulumi after every create and update, dependents first (the claim depends on its PV).
Neither PV nor claim has ``deleteBeforeReplace``: at 171490d both had it, so a changed binding
deleted the PV while its claim stayed bound (``kubernetes.io/pv-protection``) and the old job ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainstack.plan.engine import PlannedResource, run_program

PLATFORM = "organization/trainstack/local"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
JOB = "kubernetes:batch/v1:Job"
COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: vols, version: 1.0.0}
spec:
  jobType: custom
  image: registry.example.com/x:1
  command: python main.py
  inputs: [{name: train}]
"""


def plan(tmp: Path, uri: str) -> dict[str, PlannedResource]:
    from trainstack.infra.run.program import build_run
    from trainstack.render import RenderOptions, render_run
    from trainstack.spec import load_run

    tmp.mkdir()
    (tmp / "component.yaml").write_text(COMPONENT)
    (tmp / "run.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: vols}\nspec:\n"
        f"  component: ./component.yaml\n  inputs: {{train: '{uri}'}}\n"
    )
    run = load_run(tmp / "run.yaml")
    manifests = render_run(run, options=RenderOptions(namespace="nlp"))
    planned = run_program(
        lambda: build_run(run, manifests, PLATFORM),
        project="trainstack-runs",
        stack="local.nlp.vols",
        config={},
        secret_keys=frozenset(),
        reads={PLATFORM: {"name": PLATFORM, "outputs": {"kubeconfig": "k"}}},
    )
    return {f"{r.type}::{r.name}": r for r in planned.resources if r.type.startswith("kubernetes:")}


def only(resources: dict[str, PlannedResource], typ: str) -> PlannedResource:
    (found,) = [r for r in resources.values() if r.type == typ]
    return found


def in_dependency_order(resources: dict[str, PlannedResource]) -> list[str]:
    """Keys of ``resources``, each after what it depends on (the plan lists them by name)."""
    done: list[str] = []
    while len(done) < len(resources):
        done += sorted(
            k
            for k, r in resources.items()
            if k not in done and all(d in done or d not in resources for d in r.depends_on)
        )
    return done


def update_steps(old: dict[str, PlannedResource], new: dict[str, PlannedResource]) -> list[str]:
    """The steps ``pulumi up`` takes from ``old`` to ``new`` (Pulumi's step generator, for the
    cases here): the program's resources in registration (dependency) order — a changed one whose
    options say deleteBeforeReplace is deleted first, then created; an unchanged one is left —
    and then the resources gone from the program are deleted, dependents before what they depend
    on."""
    steps: list[str] = []
    for key in in_dependency_order(new):
        res = new[key]
        before = old.get(key)
        if before is None:
            steps.append(f"create {key}")
        elif before.inputs != res.inputs:
            steps += (
                [f"delete {key}", f"create {key}"]
                if res.delete_before_replace
                else [f"replace {key}"]
            )
    gone = [k for k in old if k not in new]
    while gone:  # a removed resource is deleted once nothing removed depends on it
        free = [k for k in gone if not any(k in old[o].depends_on for o in gone if o != k)]
        steps += [f"delete {k}" for k in free]
        gone = [k for k in gone if k not in free]
    return steps


def test_a_changed_binding_replaces_the_volume_pair_around_the_job(tmp_path: Path) -> None:
    old = plan(tmp_path / "v1", "oss://acme-data/ds/v1/")
    new = plan(tmp_path / "v2", "oss://acme-data/ds/v2/")
    old_pv, old_pvc, new_pv, new_pvc = (
        f"{t}::{only(p, t).name}" for p, t in ((old, PV), (old, PVC), (new, PV), (new, PVC))
    )
    assert old_pv != new_pv and old_pvc != new_pvc
    for resources in (old, new):
        pv, pvc, job = only(resources, PV), only(resources, PVC), only(resources, JOB)
        assert not pv.delete_before_replace and not pvc.delete_before_replace
        assert pvc.depends_on == (f"{PV}::{pv.name}",)  # created after, deleted before its PV
        assert {f"{PV}::{pv.name}", f"{PVC}::{pvc.name}"} <= set(job.depends_on)
        assert job.delete_before_replace and job.replace_on_changes == ("*",)
    steps = update_steps(old, new)
    job_key = f"{JOB}::{only(new, JOB).name}"
    assert steps.index(f"create {new_pv}") < steps.index(f"create {new_pvc}")
    assert steps.index(f"create {new_pvc}") < steps.index(f"delete {job_key}")
    assert steps.index(f"create {job_key}") < steps.index(f"delete {old_pvc}")
    assert steps.index(f"delete {old_pvc}") < steps.index(f"delete {old_pv}")


def test_an_unchanged_binding_changes_nothing(tmp_path: Path) -> None:
    first = plan(tmp_path / "a", "nas://nas.example.com/ds/")
    second = plan(tmp_path / "b", "nas://nas.example.com/ds/")
    assert update_steps(first, second) == []


def test_the_plan_json_shows_how_each_resource_is_replaced(tmp_path: Path) -> None:
    resources: dict[str, Any] = {
        k: r.to_json()["options"] for k, r in plan(tmp_path / "a", "oss://acme-data/x/").items()
    }
    pv = next(v for k, v in resources.items() if k.startswith(PV))
    job = next(v for k, v in resources.items() if k.startswith(JOB))
    assert pv["deleteBeforeReplace"] is False and job["deleteBeforeReplace"] is True
    assert job["replaceOnChanges"] == ["*"]
