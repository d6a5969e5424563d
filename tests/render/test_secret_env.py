"""spec.secretEnv renders as valueFrom.secretKeyRef on every replica's main container, after the
plain env and sorted by name; nothing else (no value, no Secret object, not the init container)."""

from __future__ import annotations

from typing import Any

from tests.render.conftest import CASES
from trainstack.render import render_run


def _pod_specs(job: dict[str, Any]) -> list[dict[str, Any]]:
    spec = job["spec"]
    if "template" in spec:  # batch/v1 Job
        return [spec["template"]["spec"]]
    return [
        r["template"]["spec"]
        for key, reps in spec.items()
        if key.endswith("ReplicaSpecs")
        for r in reps.values()
    ]


REFS = [
    {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token.vision", "key": "token"}},
    },
    {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}},
]


def test_secret_env_is_a_secret_key_ref_on_every_replica() -> None:
    case = next(c for c in CASES if c.name == "secret-env")
    docs = render_run(case.run(), options=case.options)
    assert all(doc["kind"] != "Secret" for doc in docs)
    pods = _pod_specs(docs[-1])
    assert len(pods) == 2  # Master, Worker
    for pod in pods:
        (main,) = pod["containers"]
        env = main["env"]
        assert env[-2:] == REFS
        # the replica's index comes from its pod (a fieldRef), every other value is literal
        assert env[-3]["name"] == "TRAINSTACK_REPLICA_INDEX" and "fieldRef" in env[-3]["valueFrom"]
        plain = env[:-3]
        assert all(set(e) == {"name", "value"} for e in plain)
        assert {"name": "WANDB_PROJECT", "value": "resnet"} in plain
        for init in pod.get("initContainers", []):
            assert "HF_TOKEN" not in {e["name"] for e in init.get("env", [])}


def test_runs_without_secret_env_render_no_value_from() -> None:
    for case in CASES:
        if case.name == "secret-env":
            continue
        for pod in _pod_specs(render_run(case.run(), options=case.options)[-1]):
            for c in [*pod["containers"], *pod.get("initContainers", [])]:
                assert all(
                    "secretKeyRef" not in e.get("valueFrom", {}) for e in c.get("env", [])
                ), case.name
