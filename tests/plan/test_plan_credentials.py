"""`trainstack plan` never prints a provider's credential input: a kubeconfig
given as plain stack config (a path, or a whole admin config with its token) shows as [secret]."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.clirunner import Cli

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: kubeTokenValue42\n"
)


@pytest.mark.parametrize("fmt", ["--json", None])
def test_a_plain_kubeconfig_input_is_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str | None
) -> None:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(REPO / "platform", tmp_path / "platform")  # KubeDL's CRD lock
    text = (
        (REPO / "Pulumi.local.yaml")
        .read_text()
        .replace(
            "  # trainstack:kubeconfig: ~/.kube/config",
            "  trainstack:kubeconfig: " + json.dumps(KUBECONFIG),
        )
    )
    assert "kubeTokenValue42" in text
    (tmp_path / "Pulumi.local.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = Cli().invoke("plan", "--env", "local", *([fmt] if fmt else []))
    assert result.code == 0, result.output
    assert "kubeTokenValue42" not in result.output
    if fmt:
        doc = json.loads(result.out)
        provider = next(r for r in doc["resources"] if r["type"] == "pulumi:providers:kubernetes")
        assert provider["inputs"]["kubeconfig"] == "[secret]"
        assert provider["inputs"]["context"] == "kind-trainstack"  # not a credential: shown
