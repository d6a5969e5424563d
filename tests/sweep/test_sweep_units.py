"""Smaller pieces: the registry keeps a run's parameters; a trial's Run file; the live table;
the best trial and the history PNG."""

from __future__ import annotations

import io
from pathlib import Path

from trainstack.registry import NewRun, Registry
from trainstack.spec.loader import load_sweep
from trainstack.spec.sweepmodel import Goal
from trainstack.sweep.summary import best, draw_history
from trainstack.sweep.trialspec import trial_document
from trainstack.sweep.view import TrialRow, TrialState, View

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"


def test_the_registry_keeps_a_runs_parameters(tmp_path: Path) -> None:
    with Registry.open(tmp_path) as reg:
        rec = reg.create(
            NewRun(
                name="r",
                component="c",
                component_version="1.0.0",
                parameters={"lr": 0.01, "optimizer": "adam", "amp": False, "epochs": 2},
            )
        )
        again = reg.get(rec.id)
    assert dict(again.parameters) == {"lr": 0.01, "optimizer": "adam", "amp": False, "epochs": 2}


def test_a_trial_run_file_is_the_base_run_with_the_trials_values(tmp_path: Path) -> None:
    s = load_sweep(EXAMPLE)
    doc = trial_document(s, 7, {"lr": 0.001, "optimizer": "sgd"})
    assert doc["metadata"]["name"] == "mnist-lr-optimizer-t007"
    assert doc["metadata"]["experiment"] == "mnist-lr-optimizer"
    assert doc["metadata"]["tags"] == {
        "team": "vision",
        "sweep": "mnist-lr-optimizer",
        "trial": "7",
    }
    assert doc["spec"]["parameters"] == {
        "epochs": 2,
        "samples": 256,
        "batch-size": 64,
        "lr": 0.001,
        "optimizer": "sgd",
    }
    assert doc["spec"]["component"] == str(REPO / "components" / "mnist-ddp" / "component.yaml")


def test_a_bound_local_output_gets_a_folder_per_trial(tmp_path: Path) -> None:
    from dataclasses import replace

    from trainstack.spec.model import FrozenMap

    s = load_sweep(EXAMPLE)
    base = dict(s.base_doc)
    base["spec"] = {
        **base["spec"],
        "outputs": {"model": "file://./out/"},
        "inputs": {"train": {"uri": "file://../data/", "mode": "download"}},
    }
    doc = trial_document(replace(s, base_doc=FrozenMap(base)), 1, {"lr": 0.01})
    runs = REPO / "components" / "mnist-ddp" / "runs"
    assert doc["spec"]["outputs"]["model"] == f"file://{runs / 'out' / 'mnist-lr-optimizer-t001'}/"
    assert doc["spec"]["inputs"]["train"] == {
        "uri": f"file://{(runs / '../data').resolve()}/",
        "mode": "download",
    }


def rows() -> list[TrialRow]:
    return [
        TrialRow(0, "s-t000", {"lr": 0.1}, TrialState.COMPLETE, 0.5, "s-t000-a", ""),
        TrialRow(1, "s-t001", {"lr": 0.2}, TrialState.COMPLETE, 0.25, "s-t001-b", ""),
        TrialRow(2, "s-t002", {"lr": 0.3}, TrialState.PRUNED, None, "s-t002-c", "pruned"),
        TrialRow(3, "s-t003", {"lr": 0.4}, TrialState.FAILED, None, None, "run failed"),
    ]


def test_the_best_trial_follows_the_goal() -> None:
    assert best(rows(), Goal.MINIMIZE).number == 1  # type: ignore[union-attr]
    assert best(rows(), Goal.MAXIMIZE).number == 0  # type: ignore[union-attr]
    assert best(rows()[2:], Goal.MAXIMIZE) is None


def test_the_history_png_is_drawn_and_skipped_without_values(tmp_path: Path) -> None:
    png = draw_history(rows(), Goal.MINIMIZE, "loss", tmp_path / "h.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
    assert draw_history(rows()[2:], Goal.MINIMIZE, "loss", tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_the_live_table_is_redrawn_with_every_trial() -> None:
    out = io.StringIO()
    view = View(out, live=True)
    view.start(load_sweep(EXAMPLE), 0, 0)
    for r in rows():
        view.update(r)
    view.stop()
    text = out.getvalue()
    for r in rows():
        assert r.state.value in text and (r.run_id or "") in text
    assert "lr=0.4" in text


def test_trials_left_running_by_a_killed_sweep_run_again_on_resume(tmp_path: Path) -> None:
    """A sweep process that died (SIGKILL) leaves optuna trials RUNNING: the next run marks them
    interrupted and enqueues their parameters; they do not count against the budget."""
    from optuna.trial import TrialState as OptunaState

    from trainstack.sweep import study as studies

    s = load_sweep(EXAMPLE)
    st = studies.open_study(s, tmp_path)
    dists = studies.distributions(s)
    done = st.ask(dists)
    st.tell(done, 0.5)
    orphan = st.ask(dists)  # never told: its runner was killed
    st = studies.open_study(s, tmp_path)  # the next `trainstack sweep`
    assert studies.prepare_resume(st) == 1
    assert studies.progress(st).counted == 1
    trials = st.get_trials()
    assert trials[orphan.number].state is OptunaState.FAIL
    assert trials[orphan.number].user_attrs[studies.INTERRUPTED] is True
    again = st.ask(dists)
    assert again.params == orphan.params  # the same point, run again
    st.tell(again, 0.25)
    assert studies.prepare_resume(st) == 0  # run again once, not enqueued twice
    assert studies.progress(st).counted == 2


def test_a_resumed_seeded_random_sweep_draws_new_points_not_its_first_ones_again(
    tmp_path: Path,
) -> None:
    """A seeded random sweep stopped after three trials and resumed: its fourth trial is a point
    of its own (before, the sampler was rebuilt from the seed on every open and trial 3 repeated
    trial 0 exactly), and the same interruption resumes the same way."""
    import yaml

    from trainstack.sweep import study as studies

    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["spec"]["run"] = str(EXAMPLE.parent / doc["spec"]["run"])
    doc["spec"]["algorithm"] = "random"
    doc["spec"]["seed"] = 7
    doc["spec"]["parameters"] = {"lr": {"min": 0.0001, "max": 0.1, "log": True}}
    spec = tmp_path / "random.yaml"
    spec.write_text(yaml.safe_dump(doc))
    s = load_sweep(spec)
    draws = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        st = studies.open_study(s, tmp_path / folder)
        dists = studies.distributions(s)
        first = []
        for _ in range(3):
            t = st.ask(dists)
            st.tell(t, 0.5)
            first.append(t.params["lr"])
        st = studies.open_study(s, tmp_path / folder)  # Ctrl-C, then the same command
        fourth = st.ask(dists).params["lr"]
        assert fourth not in first, (fourth, first)
        draws.append((first, fourth))
    assert draws[0] == draws[1]  # seeded: the same sweep, interrupted alike, draws alike
