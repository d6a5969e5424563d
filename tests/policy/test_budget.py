"""Budgets as policy: a team's `trainstack:teams[].budget`, less what this machine's registry
says it spent in the window, against a run's projected cost (its requests × its timeout, or ×
its component's typical duration here). `plan` prints the projection; the team-budget rule
refuses a run over what remains, with the numbers, mandatory or advisory per environment.
Before this a budget was an unknown key and no verb projected a run's cost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from tests.clirunner import Cli
from trainstack.metrics.cost import Rates
from trainstack.metrics.spending import team_spent, typical_seconds
from trainstack.registry import NewRun, Registry, RunKind, RunStatus
from trainstack.registry.model import RunRecord

REPO = Path(__file__).resolve().parents[2]
# components/mnist-ddp/runs/baseline.yaml: team vision, 4 pods of 1 GPU, timeout 24h: 96 GPU-h
BASELINE = REPO / "components" / "mnist-ddp" / "runs" / "baseline.yaml"


def _project(tmp_path: Path, budget: object, **config: object) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", project)
    shutil.copytree(REPO / "platform", project / "platform")
    doc = yaml.safe_load((REPO / "Pulumi.ack-dev.yaml").read_text())
    doc["config"]["trainstack:teams"][0]["budget"] = budget
    doc["config"].update(config)
    (project / "Pulumi.ack-dev.yaml").write_text(yaml.safe_dump(doc))
    return project


def _check(cli: Cli, project: Path, run: Path = BASELINE) -> Any:
    return cli("policy", "check", run, "--env", "ack-dev", "--project", project, cwd=project)


def test_a_run_over_its_teams_remaining_budget_is_refused_with_the_numbers(
    tmp_path: Path, cli: Cli
) -> None:
    with Registry.open(cli.home) as reg:  # a deployed run of the team: no cost recorded yet
        rec = reg.create(
            NewRun("prev", "mnist-ddp", "1", kind=RunKind.CLUSTER, stack_name="ack-dev.vision.prev")
        )
        reg.mark_running(rec.id, [])
    project = _project(tmp_path, {"gpuHours": 50, "per": "30d"})
    done = _check(cli, project)
    assert done.returncode == 1, done.output
    assert "[mandatory] team-budget" in done.stdout
    assert "projected 96.00 GPU-h (requests × its timeout, 24h00m00s)" in done.stdout
    assert "remains of team vision's budget: 50.00 GPU-h of 50.00 GPU-h per 30d" in done.stdout
    assert "spent 0.00 GPU-h by 1 run(s) in this machine's registry" in done.stdout
    assert "Traceback" not in done.stderr


def test_within_budget_it_passes_and_plan_shows_the_projection(tmp_path: Path, cli: Cli) -> None:
    project = _project(tmp_path, {"gpuHours": 100})
    done = _check(cli, project)
    assert done.returncode == 0, done.output
    assert "team-budget" not in done.stdout  # (other advisory rules may speak)
    plan = cli("plan", BASELINE, "--env", "ack-dev", "--project", project, cwd=project)
    assert plan.returncode == 0, plan.output
    assert (
        "budget: team vision: projected 96.00 GPU-h (requests × its timeout, 24h00m00s); "
        "100.00 GPU-h of 100.00 GPU-h per 30d remain (spent 0.00 GPU-h by 0 run(s) in this "
        "machine's registry)"
    ) in plan.stdout


def test_a_money_budget_prices_the_requests_at_the_environments_rates(
    tmp_path: Path, cli: Cli
) -> None:
    costs = {"currency": "CNY", "vcpuHour": 0.5, "memoryGiBHour": 0.0, "gpuHour": 10}
    project = _project(tmp_path, {"amount": 1000, "per": "4w"}, **{"trainstack:costs": costs})
    done = _check(cli, project)
    # 16 vCPU × 0.5 + 4 GPUs × 10 = 48 CNY an hour, × 24h
    assert done.returncode == 1, done.output
    assert (
        "projected CNY 1152.00" in done.stdout
        and "CNY 1000.00 of CNY 1000.00 per 4w" in done.stdout
    )


def test_the_rule_is_advisory_where_the_environment_says_so(tmp_path: Path, cli: Cli) -> None:
    levels = {"team-budget": {"level": "advisory"}}
    project = _project(tmp_path, {"gpuHours": 1}, **{"policy:rules": levels})
    done = _check(cli, project)
    assert done.returncode == 0, done.output
    assert "[advisory] team-budget" in done.stdout


def test_without_a_timeout_or_runs_to_go_by_a_run_is_not_projected(
    tmp_path: Path, cli: Cli
) -> None:
    doc = yaml.safe_load(BASELINE.read_text())
    del doc["spec"]["timeout"]
    doc["spec"]["component"] = str(BASELINE.parent.parent / "component.yaml")
    run = tmp_path / "no-timeout.yaml"
    run.write_text(yaml.safe_dump(doc))
    project = _project(tmp_path, {"gpuHours": 1})
    done = _check(cli, project, run)
    assert done.returncode == 0, done.output  # nothing to project: not refused
    plan = cli("plan", run, "--env", "ack-dev", "--project", project, cwd=project)
    assert (
        "budget: team vision: not projected (no timeout, and no runs of its component here: "
        "set spec.timeout)"
    ) in plan.stdout


def _record(tmp_path: Path, name: str, stack: str | None, created: float, took: float,
            gpus: int = 2) -> RunRecord:  # fmt: skip
    run_dir = tmp_path / name
    (run_dir / "input" / "config").mkdir(parents=True)
    job = {"resources": {"worker": {"replicas": 1, "cpu": 1, "gpu": gpus}}}
    (run_dir / "input" / "config" / "training_job.json").write_text(json.dumps(job))
    return RunRecord(
        id=name, name=name, component="mnist-ddp", component_version="1", kind=RunKind.LOCAL,
        job_type="pytorch", experiment=None, tags=MappingProxyType({}),
        status=RunStatus.SUCCEEDED, created_at=created, started_at=created,
        finished_at=created + took, exits=(), restarts=0, run_dir=run_dir, runner_pid=None,
        runner_started_at=None, stack_name=stack, spec_path=None, reason=None,
    )  # fmt: skip


def test_spent_is_the_teams_runs_in_the_window_and_typical_is_the_median(
    tmp_path: Path,
) -> None:
    records = [
        _record(tmp_path, "a", "ack-dev.vision.a", 1000.0, 3600),  # 2 GPU-h
        _record(tmp_path, "b", "ack-dev.vision.b", 2000.0, 1800),  # 1 GPU-h
        _record(tmp_path, "old", "ack-dev.vision.old", 10.0, 3600),  # before the window
        _record(tmp_path, "nlp", "ack-dev.nlp.x", 1500.0, 3600),  # another team
        _record(tmp_path, "dev", "local.vision.y", 1500.0, 3600),  # another environment
    ]
    spent = team_spent(records, env="ack-dev", namespace="vision", since=500.0, rates=None)
    assert (spent.amount, spent.runs, spent.unpriced) == (pytest.approx(3.0), 2, 0)
    rates = Rates("CNY", vcpu_hour=1.0, gpu_hour={"default": 10.0})
    money = team_spent(records, env="ack-dev", namespace="vision", since=500.0, rates=rates)
    assert money.amount == pytest.approx(21.0 * 1.5)  # 21 CNY an hour for 1.5 hours
    assert typical_seconds(records, "mnist-ddp") == (3600.0, 5)
    assert typical_seconds(records, "other") is None


def test_the_crossguard_packs_context_carries_the_budgets(tmp_path: Path, cli: Cli) -> None:
    from trainstack.policy.model import Context

    project = _project(tmp_path, {"gpuHours": 50})
    done = cli("policy", "context", "--env", "ack-dev", "--project", project, cwd=project)
    assert done.returncode == 0, done.output
    ctx = Context.from_json(done.stdout)
    vision = ctx.budgets["vision"]
    assert (vision.limit, vision.unit, vision.per, vision.remaining) == (
        50.0,
        "gpuHours",
        "30d",
        50.0,
    )
    assert Context.from_json(ctx.to_json()) == ctx


def test_a_money_budget_without_rates_is_one_clear_error(tmp_path: Path, cli: Cli) -> None:
    project = _project(tmp_path, {"amount": 500})
    done = _check(cli, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "budget.amount: a budget in money needs trainstack:costs" in done.stderr


def test_the_projection_reads_either_deadline_and_else_the_typical_duration() -> None:
    from dataclasses import replace

    from tests.policy.test_rules import ACK, job
    from trainstack.policy.model import TeamBudget
    from trainstack.policy.rules.budget import check, projection

    budget = TeamBudget(10.0, "gpuHours", "30d", spent=4.0, runs=2, unpriced=0)
    ctx = replace(ACK, budgets={"vision": budget})
    gpus = projection(job(), ctx)
    assert gpus is not None and gpus.requests.gpus > 0
    n = gpus.requests.gpus
    assert gpus.amount is None and "no timeout" in gpus.basis  # neither: not projected
    assert list(check(job(), ctx, {})) == []

    def mpi(p: dict[str, Any]) -> None:  # an MPIJob keeps its deadline under runPolicy
        p["spec"]["runPolicy"] = {"activeDeadlineSeconds": 3 * 3600}

    inline = projection(job(lambda p: p["spec"].update(activeDeadlineSeconds=7200)), ctx)
    under = projection(job(mpi), ctx)
    assert inline is not None and inline.amount == pytest.approx(2.0 * n)
    assert under is not None and under.amount == pytest.approx(3.0 * n)
    typical = projection(job(), replace(ctx, typical_seconds=(1800.0, 4)))
    assert typical is not None and typical.amount == pytest.approx(0.5 * n)
    assert "the median of its component's 4 run(s) here" in typical.basis
    # refused once the projection is over the limit less the 4 GPU-h spent, not at it
    over = list(
        check(job(mpi), replace(ctx, budgets={"vision": replace(budget, limit=4 + 3 * n - 1)}), {})
    )
    assert len(over) == 1 and f"projected {3 * n:.2f} GPU-h" in over[0].found
    assert (
        list(
            check(job(mpi), replace(ctx, budgets={"vision": replace(budget, limit=4 + 3 * n)}), {})
        )
        == []
    )


# --- a team's deployed runs, priced from their stores ----------------------------------------

STORE_URI = "pvc://trainstack-artifacts/vision/prev/logs/"


def _deployed_run(cli: Cli, tmp_path: Path, gpu_hours: float) -> Path:
    """A deployed run of team vision in this registry, its pods' lifetimes kept in its store (a
    claim, mounted at the returned folder) as `status` leaves them: one pod of 1 GPU."""
    import time

    from trainstack.metrics import podtimes

    with Registry.open(cli.home) as reg:
        rec = reg.create(
            NewRun("prev", "mnist-ddp", "1", kind=RunKind.CLUSTER, stack_name="ack-dev.vision.prev")
        )
        reg.record_log_place(rec.id, STORE_URI, None)
    end = time.time()
    start = end - gpu_hours * 3600
    pod = podtimes.PodLife(
        "worker", 0, start, "prev-worker-0", "uid-0", end, end, podtimes.TERMINATED, gpu=1.0
    )
    kept = podtimes.PodTimes(
        "prev", "ack-dev", "ack-dev.vision.prev", "vision", "mnist-ddp", None, "succeeded", end,
        (pod,),
    )  # fmt: skip
    store = tmp_path / "claim"
    (store / "vision" / "prev" / "logs").mkdir(parents=True)
    (store / "vision" / "prev" / "logs" / podtimes.FILE).write_text(kept.to_json())
    return store


def test_a_teams_deployed_runs_count_against_its_budget_priced_from_their_stores(
    tmp_path: Path, cli: Cli
) -> None:
    """10 GPU-h spent by a deployed run of the team, 96 projected, 100 allowed: refused with
    the store read, and said plainly (never guessed, never refused for that alone) without."""
    store = _deployed_run(cli, tmp_path, gpu_hours=10)
    project = _project(tmp_path, {"gpuHours": 100, "per": "30d"})
    done = cli("policy", "check", BASELINE, "--env", "ack-dev", "--project", project,
               "--store", store, cwd=project)  # fmt: skip
    assert done.returncode == 1, done.output
    assert "remains of team vision's budget: 90.00 GPU-h of 100.00 GPU-h per 30d" in done.stdout
    assert "spent 10.00 GPU-h by 1 run(s) in this machine's registry" in done.stdout
    plan = cli("plan", BASELINE, "--env", "ack-dev", "--project", project, "--store", store,
               cwd=project)  # fmt: skip
    assert plan.returncode == 0, plan.output
    assert "90.00 GPU-h of 100.00 GPU-h per 30d remain (spent 10.00 GPU-h by 1 run(s)" in (
        plan.stdout
    )
    unmounted = cli("plan", BASELINE, "--env", "ack-dev", "--project", project, cwd=project)
    assert unmounted.returncode == 0, unmounted.output
    assert (
        "spent 0.00 GPU-h by 1 run(s) in this machine's registry, 1 of them with no record of "
        "their cost (1 deployed run(s) not priced: its claim or NAS store is not mounted here "
        "(--store DIR))"
    ) in unmounted.stdout
    assert _check(cli, project).returncode == 0  # within what it can count: not refused


def test_spent_says_why_each_deployed_run_is_unpriced(tmp_path: Path) -> None:
    from trainstack.metrics.podtimes import Stored

    records = [
        replace_kind(_record(tmp_path, name, f"ack-dev.vision.{name}", 1000.0, 3600))
        for name in ("a", "b", "c")
    ]
    stored = Stored(unread={"a": "out of reach", "b": "out of reach", "c": "damaged"})
    spent = team_spent(
        records, env="ack-dev", namespace="vision", since=500.0, rates=None, stored=stored
    )
    assert (spent.runs, spent.unpriced) == (3, 3)
    assert spent.why_unpriced == "2 deployed run(s) not priced: out of reach; 1: damaged"
    unread = team_spent(records, env="ack-dev", namespace="vision", since=500.0, rates=None)
    assert unread.why_unpriced == "3 deployed run(s) not priced: this check read no artifact store"


def replace_kind(record: RunRecord) -> RunRecord:
    """A deployed run's record: no run directory here."""
    from dataclasses import replace

    return replace(record, kind=RunKind.CLUSTER, run_dir=None)
