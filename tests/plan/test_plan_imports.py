"""`plan` imports what its environment needs: a kubeconfig environment's plan never
loads Alibaba Cloud's SDK."""

from __future__ import annotations

from pathlib import Path

from tests.importguard import imported_by

REPO = Path(__file__).resolve().parents[2]


def test_plan_of_a_run_on_a_kubeconfig_environment_leaves_alicloud_unimported() -> None:
    run = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"
    imported, out = imported_by(
        ["plan", str(run), "--env", "local", "--json"], {"pulumi_alicloud", "pulumi_kubernetes"}
    )
    assert '"kind": "run"' in out  # the plan was made and printed
    assert imported == {"pulumi_kubernetes"}
