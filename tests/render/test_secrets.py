"""No secret value reaches a rendered file: registry and OSS credentials are referenced by name
only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.render.conftest import CASES, SPECS
from trainstack.render import dump_yaml, render_run

PASSWORD = "s3cr3t-Registry-Pa55w0rd"
OSS_KEY_ID = "LTAI5tOssKeyIdForTests"
OSS_KEY_SECRET = "0ssK3ySecretForTests0nly"


@pytest.fixture
def registry_password(monkeypatch: pytest.MonkeyPatch) -> str:
    # Where the platform and CI put them: Pulumi secret config values and the environment.
    monkeypatch.setenv(
        "PULUMI_CONFIG",
        json.dumps(
            {
                "trainstack:registryPassword": PASSWORD,
                "trainstack:ossAccessKeyId": OSS_KEY_ID,
                "trainstack:ossAccessKeySecret": OSS_KEY_SECRET,
            }
        ),
    )
    monkeypatch.setenv("TRAINSTACK_REGISTRY_PASSWORD", PASSWORD)
    monkeypatch.setenv("DOCKER_PASSWORD", PASSWORD)
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", OSS_KEY_ID)
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", OSS_KEY_SECRET)
    return PASSWORD


def test_no_secret_in_any_rendered_file(registry_password: str, tmp_path: Path) -> None:
    for case in CASES:
        docs = render_run(case.run(), options=case.options)
        text = dump_yaml(docs)
        for secret in (registry_password, OSS_KEY_ID, OSS_KEY_SECRET):
            assert secret not in text, case.name
        for doc in docs:
            assert doc["kind"] != "Secret", case.name
            pod_specs = _pod_specs(doc)
            for spec in pod_specs:
                for ref in spec.get("imagePullSecrets", []):
                    assert set(ref) == {"name"}, ref
    done = Cli().invoke("render", str(SPECS / "pytorch.run.yaml"), "-o", str(tmp_path))
    assert done.code == 0, done.err
    for path in tmp_path.iterdir():
        text = path.read_text(encoding="utf-8")
        for secret in (registry_password, OSS_KEY_ID, OSS_KEY_SECRET):
            assert secret not in text, path


def test_pull_secret_referenced_by_name() -> None:
    run = CASES[1].run()  # the component names `acme-registry`
    job = render_run(run)[-1]
    for spec in _pod_specs(job):
        assert spec["imagePullSecrets"] == [{"name": "acme-registry"}]


def _pod_specs(doc: dict) -> list[dict]:
    spec = doc.get("spec", {})
    if "template" in spec:
        return [spec["template"]["spec"]]
    return [
        r["template"]["spec"]
        for key, reps in spec.items()
        if key.endswith("ReplicaSpecs")
        for r in reps.values()
    ]
