"""Each trial's Run file: the base run with the trial's parameters, named `<sweep>-t<NNN>`, in
the sweep's experiment with the tags `sweep` and `trial`. Written under the sweep's folder in the
state home, so a trial can be rerun by hand (`trainstack run FILE --local`) and the registry's
`spec_path` points at what really ran.

Paths in the base run are relative to its own file; here they are made absolute. A file://
output the base run binds is given a subfolder per trial, so trials that run at the same time
never write into the same directory.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from trainstack.spec.model import ParamValue
from trainstack.spec.sweepmodel import Sweep

SWEEP_TAG = "sweep"
TRIAL_TAG = "trial"


def trial_name(sweep: Sweep, number: int) -> str:
    return f"{sweep.name}-t{number:03d}"


def trial_document(sweep: Sweep, number: int, params: dict[str, ParamValue]) -> dict[str, Any]:
    base = copy.deepcopy(dict(sweep.base_doc))
    meta = dict(base.get("metadata") or {})
    spec = dict(base.get("spec") or {})
    name = trial_name(sweep, number)
    tags = {
        **(meta.get("tags") or {}),
        **dict(sweep.tags),
        SWEEP_TAG: sweep.name,
        TRIAL_TAG: str(number),
    }
    meta.update(
        name=name,
        experiment=sweep.experiment,
        tags=tags,
        description=f"trial {number} of sweep {sweep.name}",
    )
    spec["component"] = _absolute_ref(str(spec["component"]), sweep.base_dir)
    spec["parameters"] = {**(spec.get("parameters") or {}), **params}
    for group in ("inputs", "outputs"):
        if isinstance(spec.get(group), dict):
            spec[group] = {
                k: _binding(v, sweep.base_dir, name if group == "outputs" else None)
                for k, v in spec[group].items()
            }
    if isinstance(spec.get("models"), list):
        spec["models"] = [
            {**m, "uri": _uri(m["uri"], sweep.base_dir, None)} for m in spec["models"]
        ]
    return {"apiVersion": base["apiVersion"], "kind": "Run", "metadata": meta, "spec": spec}


def write_trial(sweep: Sweep, directory: Path, number: int, params: dict[str, ParamValue]) -> Path:
    path = directory / "trials" / f"{trial_name(sweep, number)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(trial_document(sweep, number, params), sort_keys=False)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _absolute_ref(ref: str, base_dir: Path) -> str:
    if "/" in ref or ref.endswith((".yaml", ".yml")) or ref.startswith("."):
        return str((base_dir / ref).resolve())
    return ref  # name@version: found from the components directory


def _binding(value: Any, base_dir: Path, per_trial: str | None) -> Any:
    if isinstance(value, dict):
        return {**value, "uri": _uri(value["uri"], base_dir, per_trial)}
    return _uri(value, base_dir, per_trial)


def _uri(uri: str, base_dir: Path, per_trial: str | None) -> str:
    if not uri.startswith("file://"):
        return uri
    path = Path(uri.removeprefix("file://"))
    path = path if path.is_absolute() else (base_dir / path).resolve()
    if per_trial is not None:
        path = path / per_trial
    return f"file://{path}/" if per_trial is not None or uri.endswith("/") else f"file://{path}"
