"""A value in a credential-shaped field is never echoed back, in text or JSON diagnostics."""

from __future__ import annotations

from pathlib import Path

from tests.spec.clirun import trainstack

COMPONENT = """apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: leaky, version: 1.0.0}
spec:
  jobType: pytorch
  image: registry.example.com/acme/torch:2.3
  imagePullSecret: "S3cr3t-Passw0rd!"
  command: python main.py
"""


def test_a_pasted_password_in_image_pull_secret_is_not_echoed(tmp_path: Path) -> None:
    spec = tmp_path / "component.yaml"
    spec.write_text(COMPONENT)
    for fmt in ("text", "json"):
        result = trainstack("validate", spec, "--format", fmt)
        assert result.code == 2
        both = result.out + result.err
        assert "spec.imagePullSecret" in both
        assert "S3cr3t-Passw0rd!" not in both
