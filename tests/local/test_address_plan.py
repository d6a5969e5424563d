"""The local runner's address choice is one small, swappable piece: every
replica shares this machine's network namespace today (127.0.0.1, a free port each), so
KubeDL's documented XGBoost example — master-0 and worker-0 both RANK=0
(controllers/xgboostjob/pod.go), each starting a rabit tracker on MASTER_PORT — binds the same
port twice here, while two pods both succeed. The sandbox's plan (each replica its own
namespace: trainstack.local.podns.PodAddresses) is another `AddressPlan`; tests/local/
test_sandbox.py runs that example both ways. Before this, the ports were chosen inside jobplan."""

from __future__ import annotations

from pathlib import Path

from tests.render.conftest import SPECS
from trainstack.contract import Topology
from trainstack.local.jobplan import plan_job
from trainstack.local.ports import AddressPlan, SharedLoopback
from trainstack.local.sandbox import Layout
from trainstack.spec import load_run
from trainstack.spec.model import Run

ROOT = Path(__file__).resolve().parents[2]


class FixedPorts:
    """A stand-in plan: port 40000 + n for the n-th replica."""

    def topology(self, run: Run, keys: list[tuple[str, int]]) -> Topology:
        by_role: dict[str, list[int]] = {}
        for n, (role, _index) in enumerate(keys):
            by_role.setdefault(role, []).append(40000 + n)
        return Topology.local(run, by_role)


def test_plan_job_takes_its_addresses_from_the_plan_it_is_given(tmp_path: Path) -> None:
    run = load_run(SPECS / "xgboost.run.yaml")
    plan: AddressPlan = FixedPorts()
    job = plan_job(
        run,
        Layout(tmp_path / "rd"),
        run_id="r",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
        addresses=plan,
    )
    master = next(x for x in job.launches if x.role == "master")
    assert master.env["MASTER_PORT"] == "40000"
    default = plan_job(
        run, Layout(tmp_path / "rd2"), run_id="r", venv=None, grace_seconds=1, available_gpus=()
    )
    assert isinstance(SharedLoopback(), AddressPlan)
    assert default.launches[0].env["MASTER_ADDR"] in ("127.0.0.1", "localhost")


def test_local_md_names_the_xgboost_tracker_case() -> None:
    text = " ".join((ROOT / "docs" / "local.md").read_text().split())
    assert "rabit tracker" in text and "RANK=0" in text
    assert "TRAINSTACK_ROLE" in text  # what to change in such code
