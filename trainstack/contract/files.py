"""The files under `$PAI_CONFIG_DIR`: hyperparameters.json and training_job.json (Alibaba PAI
Designer custom components: the `PAI_*` environment variables and the config directory).

training_job.json is the whole job as the process may want it — component, parameters, channel
bindings and their paths, resources, cluster addresses, policies — but never a secret: the image
pull secret appears by name only, `secretEnv` as names and Secret references only, and (for a
model built without the loader's rules) env values whose names look secret are withheld.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any

from trainstack.contract import framework
from trainstack.contract.hyper import hyperparameters_file
from trainstack.contract.layout import Layout
from trainstack.contract.topology import Topology
from trainstack.secretnames import looks_secret
from trainstack.spec.fields import Load, SpecField, job_fields
from trainstack.spec.model import JobType, Run

HYPERPARAMETERS = "hyperparameters.json"
TRAINING_JOB = "training_job.json"
WITHHELD = "<withheld>"


def training_job(run: Run, topology: Topology, layout: Layout | None = None) -> dict[str, Any]:
    """Every field the model declares for training_job.json (trainstack.spec.fields), under its
    name there, plus what the cluster decides: the job's name and its replicas' addresses."""
    lay = layout or Layout.at()
    out: dict[str, Any] = {"name": run.name, "jobName": topology.job_name}
    out["component"] = _nested(run.component, lay)
    out.update({key: _dump(f, v, lay) for key, f, v in job_fields(run) if key not in out})
    # Only replicas that can be reached by name (KubeDL's Services); others have no address.
    out["cluster"] = {role: list(addrs) for role, addrs in topology.addressable(run).items()}
    out["imagePullSecret"] = run.pull_secret  # the one that applies: a Secret's name
    return out


def _dump(f: SpecField, value: Any, lay: Layout) -> Any:
    """A field's value as training_job.json holds it: paths where the process finds what a
    binding names, never a secret."""
    if value is None:
        return None
    if f.load is Load.INPUTS:
        return {
            n: {"uri": b.uri, "path": lay.input_path(n, b), "mode": b.mode}
            for n, b in value.items()
        }
    if f.load is Load.OUTPUTS:
        return {n: {"uri": b.uri, "path": lay.output_dir(n)} for n, b in value.items()}
    if f.load is Load.MODELS:
        return [
            {
                "name": m.name,
                "uri": m.binding.uri,
                "version": m.version,
                "path": lay.model_path(m.name, m.binding),
            }
            for m in value
        ]
    if f.load is Load.ENV:
        return {k: WITHHELD if looks_secret(k) else v for k, v in value.items()}
    if f.load is Load.SECRET_ENV:
        # Where each value comes from (a Secret's name and key), never the value.
        return {k: {"secret": ref.secret, "key": ref.key} for k, ref in value.items()}
    if f.load is Load.CODE:
        return value.kind  # where it came from; the process finds it in its working directory
    if f.load is Load.RESOURCES:
        return {role: _nested(r, lay) for role, r in value.items()}
    if f.load is Load.QUANTITY:
        return value.text
    if f.nested is not None and dataclasses.is_dataclass(f.nested):
        return [_nested(v, lay) for v in value] if isinstance(value, tuple) else _nested(value, lay)
    return _plain(value)


def _nested(obj: object, lay: Layout) -> dict[str, Any]:
    return {key: _dump(f, v, lay) for key, f, v in job_fields(obj)}


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def config_files(run: Run, topology: Topology, layout: Layout | None = None) -> dict[str, str]:
    """Relative file name → content, for `$PAI_CONFIG_DIR`."""
    files = {
        HYPERPARAMETERS: hyperparameters_file(run),
        TRAINING_JOB: json.dumps(training_job(run, topology, layout), ensure_ascii=False, indent=2)
        + "\n",
    }
    if run.job_type is JobType.MPI and topology.is_local:
        files[framework.HOSTFILE] = framework.local_hostfile(run, topology.job_name)
    return files
