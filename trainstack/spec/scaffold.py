"""`trainstack init`: a new component folder whose specs validate and whose code reads the
in-container contract. Plain string templates: nothing heavy on this path."""

from __future__ import annotations

import re
from pathlib import Path

from trainstack import API_VERSION, suggest
from trainstack.errors import UserError
from trainstack.k8snames import MAX_JOB_NAME
from trainstack.kubedl import job_kind
from trainstack.spec.model import JobType
from trainstack.spec.schema import COMPONENT_NAME

COMPONENT_YAML = """\
# The component: what runs (image, code, command) and what it takes (channels, parameters).
# Check it with `trainstack validate .`; see `trainstack schema component` for every field.
apiVersion: {api_version}
kind: Component
metadata:
  name: {name}
  version: 0.1.0
  description: {name}, scaffolded by trainstack init.
  versionDescription: First version.
spec:
  jobType: {job_type}
{image_note}  image: {image}
  code: ./src              # copied to /ml/usercode/ (the working directory)
  # $PAI_USER_ARGS becomes `--epochs 3 --lr 0.01 ...`, one argument per value, never re-parsed
  # by the shell; $PAI_INPUT_<NAME> / $PAI_OUTPUT_<NAME> are the channels' paths.
  command: {launch} $PAI_USER_ARGS --train $PAI_INPUT_TRAIN --model $PAI_OUTPUT_MODEL
  inputs:
    - {{name: train, description: training data, required: true}}
  outputs:
    - {{name: model, description: the trained model}}
  parameters:
    - {{name: epochs, type: Int, default: 3, range: {{min: 1, max: 1000}}}}
    - {{name: lr, type: Float, default: 0.01, range: {{min: 0.0, max: 1.0}}}}
    - {{name: optimizer, type: String, default: adam, enum: [adam, sgd]}}
    - {{name: verbose, type: Bool, default: false}}
  constraints: {{machineType: [cpu, gpu], multiNode: true, multiGpu: false}}
"""

RUN_YAML = """\
# A run: the component bound to values, data and resources. `file://` paths are relative to
# this file (sample data in data/, results in outputs/), so
# `trainstack run --local {run_file}` works straight away; `trainstack plan {run_file}
# --env local` plans it on the shipped kind environment. `team` picks the namespace it deploys
# to: one of the environment's trainstack:teams (Pulumi.<env>.yaml; docs/deploy.md).
apiVersion: {api_version}
kind: Run
metadata:
  name: {run_name}
  description: Example run of {name} on the sample data.
  tags: {{team: vision}}
spec:
  component: ../component.yaml
  parameters: {{epochs: 2, lr: 0.05}}
  inputs:
    train: file://./data/train/
  outputs:
    model: file://./outputs/model/
  resources:
{resources}
  faultTolerance: {{maxRestarts: 3}}
  timeout: 1h
"""

# The environment whose registry a scaffold's image names: the run it writes plans there (README).
SCAFFOLD_ENV = "local"
MIRROR_PATH = "trainstack"  # <registry>/trainstack/<upstream name>:<tag>


def scaffold_image(upstream: str, registry: str | None) -> tuple[str, str]:
    """The image the scaffold names, and the comment above it. With a registry (the platform's:
    the allowed-registries policy admits it, Docker Hub it refuses) the upstream image mirrored
    there, with how to push it; without one, the upstream image and what the policy will say."""
    if registry is None:
        return upstream, (
            "  # on Docker Hub, which the allowed-registries policy refuses on a cluster:\n"
            "  # mirror it into your platform's registry and name it here\n"
            "  # (or: trainstack init --registry REGISTRY)\n"
        )
    base = upstream.rsplit("/", 1)[-1]
    image = f"{registry.rstrip('/')}/{MIRROR_PATH}/{base}"
    return image, (
        "  # the upstream image, mirrored into the platform's registry; push it there once:\n"
        f"  #   docker pull {upstream}\n"
        f"  #   docker tag {upstream} {image} && docker push {image}\n"
    )


def platform_registry(start: Path) -> str | None:
    """The registry of the platform project's ``local`` environment, found from ``start``; None
    without a project or one that names none. Never an error: ``init`` works anywhere."""
    from trainstack.envfile import find_project, read_env

    for where in (start, None):  # the folder written into, else $TRAINSTACK_PROJECT or cwd
        try:
            env = read_env(find_project(where), SCAFFOLD_ENV)
            break
        except UserError:
            continue
    else:
        return None
    server = env.values.get("trainstack:registryServer")
    return server or None


SAMPLE_CSV = "x,y\n0.0,1.0\n1.0,3.0\n2.0,5.0\n3.0,7.0\n"

MAIN_PY = '''\
"""{name}: a starting point that reads trainstack's in-container contract.

Everything arrives the platform's way, on a cluster and under `trainstack run --local` alike:
  * hyperparameters as flags (`$PAI_USER_ARGS`), also as `$PAI_HPS` (JSON), `$PAI_HPS_<NAME>`
    and `$PAI_CONFIG_DIR/hyperparameters.json`;
  * channels as paths: `--train $PAI_INPUT_TRAIN` (a directory under /ml/input/data/, or the
    file in it when the binding names one) and `--model $PAI_OUTPUT_MODEL` (/ml/output/model/);
  * the replica's place in the job from the framework's variables (TF_CONFIG, RANK/WORLD_SIZE,
    ElASTICBATCH_CONFIG, OMPI_COMM_WORLD_RANK, JOB_COMPLETION_INDEX);
  * `$METRICS`, a directory for metrics.json (chart metadata: at most 6 charts, one or two
    y-axes, at most 4 series, smoothing) and one CSV per chart; `trainstack metrics RUN --png DIR`
    draws them (the spec: docs/metrics.md in trainstack).
Replace `train()` with your own training; keep the reading and writing around it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from pathlib import Path


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--verbose", type=lambda s: s.lower() == "true", default=False)
    p.add_argument("--train", default=os.environ.get("PAI_INPUT_TRAIN", ""))
    p.add_argument("--model", default=os.environ.get("PAI_OUTPUT_MODEL", ""))
    args, unknown = p.parse_known_args()
    if unknown:
        print(f"ignoring unknown arguments: {{unknown}}", flush=True)
    return args


def hyperparameters() -> dict[str, object]:
    """The run's hyperparameters as typed JSON values (the flags carry them as text)."""
    config = Path(os.environ.get("PAI_CONFIG_DIR", "/ml/input/config"))
    path = config / "hyperparameters.json"
    if path.is_file():
        return dict(json.loads(path.read_text()))
    return dict(json.loads(os.environ.get("PAI_HPS", "{{}}")))


def replica() -> tuple[str, int, int]:
    """(role, rank, world size) of this process, from whichever framework set it."""
    env = os.environ
    if "TF_CONFIG" in env:
        cfg = json.loads(env["TF_CONFIG"])
        task = cfg.get("task", {{}})
        size = sum(len(v) for v in cfg.get("cluster", {{}}).values())
        role = task.get("type", "worker")
        primary = role == "chief" or ("chief" not in cfg.get("cluster", {{}})
                                      and role == "worker" and task.get("index") == 0)
        return role, 0 if primary else 1 + int(task.get("index", 0)), size
    if "RANK" in env and "WORLD_SIZE" in env:
        rank = int(env["RANK"])
        return "master" if rank == 0 else "worker", rank, int(env["WORLD_SIZE"])
    if "ElASTICBATCH_CONFIG" in env:
        task = json.loads(env["ElASTICBATCH_CONFIG"]).get("task", {{}})
        return "worker", int(task.get("index", 0)), 0
    if "OMPI_COMM_WORLD_RANK" in env:
        return "worker", int(env["OMPI_COMM_WORLD_RANK"]), int(env["OMPI_COMM_WORLD_SIZE"])
    if "JOB_COMPLETION_INDEX" in env:
        return "worker", int(env["JOB_COMPLETION_INDEX"]), 0
    return "worker", 0, 1


def gpus() -> int:
    visible = os.environ.get("NVIDIA_VISIBLE_DEVICES", "")
    return 0 if visible in ("", "void", "none") else len(visible.split(","))


def read_rows(train: str) -> list[list[str]]:
    """Every CSV row under the train channel (a directory, or the one file it names)."""
    if not train:
        return []
    root = Path(train)
    files = [root] if root.is_file() else sorted(root.rglob("*.csv")) if root.is_dir() else []
    rows: list[list[str]] = []
    for f in files:
        with f.open(newline="") as fh:
            rows += list(csv.reader(fh))[1:]
    return rows


def train(rows: list[list[str]], epochs: int,
          lr: float) -> tuple[dict[str, list[list[float]]], float, float]:
    """A least-squares line y = w*x + b by gradient descent: stands in for real training.
    Returns the metrics rows per chart (see METAS) and the fitted w and b."""
    points = [(float(x), float(y)) for x, y in rows] or [(0.0, 0.0)]
    w = b = 0.0
    tables: dict[str, list[list[float]]] = {{"fit": [], "steps": []}}
    for epoch in range(1, epochs + 1):
        for _ in range(50):
            gw = sum(2 * (w * x + b - y) * x for x, y in points) / len(points)
            gb = sum(2 * (w * x + b - y) for x, y in points) / len(points)
            w, b = w - lr * gw, b - lr * gb
            tables["steps"].append([len(tables["steps"]) + 1, gw, gb])
        loss = sum((w * x + b - y) ** 2 for x, y in points) / len(points)
        tables["fit"].append([epoch, loss, w])
    return tables, w, b


# Chart metadata (field names of the Octopus training-task service's metrics spec): "fit" has
# two y-axes (loss left, w right) and no series; "steps" has two series on one axis, drawn smoothed.
# "goals" (trainstack's addition) says what "best" means: the lowest loss. The slope and the
# gradients have no best, so they declare none and show only their last value.
METAS = [
    {{"name": "fit", "x": "epoch", "ys": ["loss", "w"], "series": [], "goals": {{"loss": "min"}},
     "description": "loss and slope per epoch", "smooth": "false", "with_timestamp": "false"}},
    {{"name": "steps", "x": "step", "ys": ["gradient"], "series": ["grad_w", "grad_b"],
     "description": "gradients per step", "smooth": "true", "with_timestamp": "false"}},
]


def write_metrics(tables: dict[str, list[list[float]]]) -> None:
    """One CSV per chart (x, then each series, or each y-axis when there are no series)."""
    target = os.environ.get("METRICS")
    if not target:
        return
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    for meta in METAS:
        with (out / f"{{meta['name']}}.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow([meta["x"], *(meta["series"] or meta["ys"])])
            writer.writerows(tables[str(meta["name"])])
    (out / "metrics.json").write_text(json.dumps({{"id": os.environ.get("JOB_NAME", ""),
                                                  "metas": METAS}}, indent=2))


def main() -> None:
    args = parse_args()
    role, rank, world = replica()
    print(f"{{role}} rank {{rank}} of {{world}}; {{gpus()}} GPU(s); "
          f"working dir {{os.environ.get('PAI_WORKING_DIR', os.getcwd())}}", flush=True)
    print(f"hyperparameters: {{hyperparameters()}}", flush=True)
    rows = read_rows(args.train)
    print(f"train: {{args.train!r}} ({{len(rows)}} rows); model: {{args.model!r}}", flush=True)
    tables, w, b = train(rows, args.epochs, args.lr)
    if rank == 0:  # one replica writes the results
        write_metrics(tables)
        if args.model:
            out = Path(args.model)
            out.mkdir(parents=True, exist_ok=True)
            (out / "model.json").write_text(json.dumps({{"w": w, "b": b,
                                                        "optimizer": args.optimizer}}))
            print(f"wrote {{out / 'model.json'}}", flush=True)


if __name__ == "__main__":
    main()
'''


def _run_name(component: str) -> str:
    """The example run's name, already a job name (a run's name must be: spec/rules/names) for
    any component name: a job name starts with a letter and is at most MAX_JOB_NAME long."""
    suffix = "-example"
    stem = component if component[0].isalpha() else "run-" + component
    return stem[: MAX_JOB_NAME - len(suffix)].rstrip("-") + suffix


def scaffold(
    name: str, job_type: str = "pytorch", parent: Path = Path("."), registry: str | None = None
) -> list[Path]:
    """Write `parent/name/` with component.yaml, src/main.py, runs/example.yaml and sample
    data; return the files written. Refuses to touch an existing non-empty directory.
    ``registry``: where the component's image lives (see ``scaffold_image``)."""
    if not re.fullmatch(COMPONENT_NAME, name):
        raise UserError(
            f"{name!r} is not a valid component name: expected 1-63 lowercase "
            "letters, digits and '-', starting and ending with a letter or digit",
            hint=f"try {_suggest_name(name)!r}" if _suggest_name(name) else None,
        )
    try:
        kind = JobType(job_type)
    except ValueError:
        raise UserError(
            f"unknown job type {job_type!r}; one of: " + ", ".join(j.value for j in JobType),
            hint=suggest.hint(job_type, [j.value for j in JobType]),
        ) from None
    target = parent / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(
            f"{target} already exists; trainstack init never overwrites",
            hint="choose another name or --dir, or remove it first",
        )
    resources = "\n".join(
        f"    {role}: {{replicas: {n}, cpu: 1, memory: 2Gi}}"
        for role, n in job_kind(kind).scaffold_roles
    )
    image, note = scaffold_image(job_kind(kind).scaffold_image, registry)
    files = {
        "component.yaml": COMPONENT_YAML.format(
            api_version=API_VERSION,
            name=name,
            job_type=kind.value,
            image=image,
            image_note=note,
            launch=job_kind(kind).scaffold_launch,
        ),
        "runs/example.yaml": RUN_YAML.format(
            api_version=API_VERSION,
            name=name,
            run_name=_run_name(name),
            run_file=f"{name}/runs/example.yaml",
            resources=resources,
        ),
        "src/main.py": MAIN_PY.format(name=name),
        "runs/data/train/sample.csv": SAMPLE_CSV,
    }
    written = []
    for rel, text in files.items():
        path = target / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x") as fh:  # exclusive: never replaces a file
                fh.write(text)
        except FileExistsError:
            raise UserError(f"{path} already exists; trainstack init never overwrites") from None
        except OSError as err:
            raise UserError(
                f"cannot write {path}: {err.strerror or err}",
                hint="choose a --dir you can write to",
            ) from None
        written.append(path)
    return written


def _suggest_name(name: str) -> str | None:
    fixed = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63].strip("-")
    return fixed if fixed and re.fullmatch(COMPONENT_NAME, fixed) else None
