"""`trainstack sweeps list|show`: the sweeps recorded in the state home (docs/sweeps.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trainstack.cli.options import environment, home_option, output_format, project_option
from trainstack.errors import UserError

if TYPE_CHECKING:
    from trainstack.registry.model import RunRecord
    from trainstack.sweep.listing import SweepInfo


@click.group()
def sweeps() -> None:
    """List and inspect sweeps."""


@sweeps.command("list")
@output_format("text", "json", help="json: the sweeps as data", json_alias=True)
@home_option
def list_sweeps(fmt: str, home: Path | None) -> None:
    """Every sweep: its trials by state and the best objective so far."""
    from trainstack.registry import state_home
    from trainstack.sweep.listing import info, names

    root = state_home(home)
    # A damaged sweep does not hide the others: they are listed, then it is reported (exit 2).
    found, problems = [], []
    for name in names(root):
        try:
            found.append(info(root, name))
        except UserError as err:
            problems.append(err)
    _list(found, fmt == "json", quiet_when_empty=bool(problems))
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise UserError(
            f"{len(problems)} sweeps could not be read:\n"
            + "\n".join(f"  {p.render()}" for p in problems)
        )


def _list(found: list[SweepInfo], as_json: bool, *, quiet_when_empty: bool) -> None:
    from trainstack.sweep.listing import listing
    from trainstack.texttable import plain

    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "name": s.name,
                        "experiment": s.experiment,
                        "objective": s.objective,
                        "goal": s.goal.value,
                        "trials": s.counts,
                        "best": _row(s.best) if s.best else None,
                    }
                    for s in found
                ],
                indent=2,
            )
        )
        return
    if not found:
        if not quiet_when_empty:
            click.echo("no sweeps recorded here")
        return
    click.echo(plain(listing(found)))


@sweeps.command("show")
@click.argument("name")
@output_format("text", "json", help="json: the sweep as data", json_alias=True)
@environment(
    "Price every trial's run at this environment's rates (default: each run's env tag or stack's)."
)
@project_option
@home_option
def show_sweep(
    name: str, fmt: str, env: str | None, project: Path | None, home: Path | None
) -> None:
    """One sweep's trials: parameters, state, objective value, run, cost; and the best trial."""
    from trainstack.metrics import cost
    from trainstack.metrics.values import number
    from trainstack.registry import state_home
    from trainstack.sweep.listing import info
    from trainstack.sweep.view import params_text, table
    from trainstack.texttable import plain

    root = state_home(home)
    s = info(root, name)
    priced = cost.priced(_trial_records(root, s), env, project)
    cells = {k: p.cells() for k, p in priced.items()}
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "name": s.name,
                    "experiment": s.experiment,
                    "spec": s.spec,
                    "objective": s.objective,
                    "goal": s.goal.value,
                    "trials": [{**_row(r), **_cost_json(cells, r.run_id)} for r in s.trials],
                    "cost": cost.total_text(list(priced.values())),
                    "best": _row(s.best) if s.best else None,
                    "history": str(s.history) if s.history else None,
                },
                indent=2,
            )
        )
        return
    click.echo(f"sweep {s.name}  experiment {s.experiment}  {s.goal.value} {s.objective}")
    click.echo(f"spec {s.spec}")
    click.echo(plain(table(list(s.trials), costs=cells)))
    top = s.best
    if top is not None:
        click.echo(
            f"best: trial {top.number} ({top.run_id or top.name}) {s.objective} = "
            f"{number(top.value)}; {params_text(top.params)}"
        )
    else:
        click.echo("best: no trial completed yet")
    click.echo(f"cost: {cost.total_text(list(priced.values()))}")
    if s.history:
        click.echo(f"history: {s.history}")
    click.echo(f"runs: trainstack runs list --experiment {s.experiment} --tag sweep={s.name}")


def _row(r: object) -> dict[str, object]:
    from trainstack.sweep.view import TrialRow

    assert isinstance(r, TrialRow)
    return {
        "trial": r.number,
        "state": r.state.value,
        "value": r.value,
        "params": r.params,
        "run": r.run_id,
        "name": r.name,
        "reason": r.reason or None,
    }


def _trial_records(root: Path, s: SweepInfo) -> list[RunRecord]:
    """The registry's record of each trial that has a run (one the registry lost is skipped:
    its cost is shown as unknown)."""
    from trainstack.errors import NotFoundError
    from trainstack.registry import Registry

    ids = [r.run_id for r in s.trials if r.run_id]
    if not ids:
        return []
    found = []
    with Registry.open(root) as reg:
        for run_id in ids:
            try:
                found.append(reg.get(run_id))
            except NotFoundError:
                continue
    return found


def _cost_json(cells: dict[str, tuple[str, str, str]], run_id: str | None) -> dict[str, object]:
    if not run_id or run_id not in cells:
        return {"cost": None}
    rt, money, idle = cells[run_id]
    return {"cost": {"resourceTime": rt, "cost": money, "idleShare": idle}}
