"""Registries for the console's tests of what it keeps and how it shows a wide run, made through
the real APIs: the registry (Registry.create, mark_running, finish), real run folders (metrics,
usage samples, logs) and real optuna storages made as trainstack.sweep.study makes them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trainstack.registry import NewRun, Registry, ReplicaExit, RunStatus


def wide_run(home: Path, replicas: int = 32, failed: int = 17, samples: int = 20) -> str:
    """A failed run of `replicas` workers: worker-`failed` exited 1 (the reason names it), the
    others were stopped when the job ended; each has usage samples and a log of its own."""
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name="wide", component="c", component_version="1.0.0"))
        reg.mark_running(rec.id, [ReplicaExit("worker", i, None) for i in range(replicas)])
        reg.finish(
            rec.id,
            RunStatus.FAILED,
            exits=[
                ReplicaExit("worker", i, 1 if i == failed else 143, stopped=i != failed)
                for i in range(replicas)
            ],
            reason=f"worker-{failed} exited with code 1",
        )
    assert rec.run_dir is not None
    logs = rec.run_dir / "logs"
    logs.mkdir(parents=True)
    with (rec.run_dir / "usage.jsonl").open("w") as fh:
        for t in range(samples):
            for i in range(replicas):
                sample = {"t": 100.0 + t, "replica": f"worker-{i}", "cpu_percent": 10.0 + i,
                          "rss_bytes": (1 << 28) + t * 4096}  # fmt: skip
                fh.write(json.dumps(sample) + "\n")
    for i in range(replicas):
        (logs / f"worker-{i}.log").write_text(f"worker-{i} starts\nworker-{i} last words\n")
    return rec.id


def metric_run(home: Path, name: str, points: int = 50, scale: float = 1.0) -> str:
    """A succeeded run with one chart `train` (step, loss) of `points` points."""
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name=name, component="c", component_version="1.0.0"))
        reg.mark_running(rec.id, [])
        reg.finish(rec.id, RunStatus.SUCCEEDED)
    assert rec.run_dir is not None
    metrics = rec.run_dir / "metrics"
    metrics.mkdir(parents=True)
    meta = {"name": "train", "x": "step", "ys": ["loss"], "series": [], "description": "train",
            "smooth": "false", "with_timestamp": "false"}  # fmt: skip
    (metrics / "metrics.json").write_text(json.dumps({"id": rec.id, "metas": [meta]}))
    rows = "".join(f"{s},{scale / s}\n" for s in range(1, points + 1))
    (metrics / "train.csv").write_text("step,loss\n" + rows)
    return rec.id


def sweep(home: Path, name: str, trials: int) -> None:
    """A sweep's optuna storage holding `trials` completed trials (minimize train/loss)."""
    import optuna

    from trainstack.sweep import study as studies

    directory = studies.sweep_dir(home, name)
    directory.mkdir(parents=True)
    # 0600, as the sweep makes it: a storage others may write is refused (trust).
    os.close(os.open(directory / studies.STORAGE_FILE, os.O_CREAT | os.O_WRONLY, 0o600))
    studies.quiet()
    st = optuna.create_study(
        storage=studies.storage_url(directory), study_name=name, direction="minimize"
    )
    st.set_user_attr("objective", "train/loss")
    st.set_user_attr("experiment", "kept")
    for n in range(trials):
        add_trial(home, name, 1.0 / (n + 1), study=st)


def add_trial(home: Path, name: str, value: float, study: object = None) -> None:
    import optuna

    from trainstack.sweep import study as studies

    st = study or optuna.load_study(
        study_name=name, storage=studies.storage_url(studies.sweep_dir(home, name))
    )
    assert isinstance(st, optuna.Study)
    number = len(st.get_trials(deepcopy=False))
    st.add_trial(
        optuna.trial.create_trial(
            params={"lr": 0.001 * (number + 1)},
            distributions={"lr": optuna.distributions.FloatDistribution(1e-4, 1.0)},
            value=value,
            user_attrs={studies.RUN_ID: f"{name}-{number}", studies.RUN_NAME: f"t{number}"},
        )
    )
