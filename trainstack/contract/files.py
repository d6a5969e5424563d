"""The files under `$PAI_CONFIG_DIR`: hyperparameters.json and training_job.json (Alibaba PAI
Designer custom components: the `PAI_*` environment variables and the config directory).

training_job.json is the whole job as the process may want it — component, parameters, channel
bindings and their paths, resources, cluster addresses, policies — but never a secret: the image
pull secret appears by name only, `secretEnv` as names and Secret references only, and (for a
model built without the loader's rules) env values whose names look secret are withheld.
"""

from __future__ import annotations

import json
from typing import Any

from trainstack.contract import framework
from trainstack.contract.hyper import hyperparameters_file
from trainstack.contract.layout import Layout
from trainstack.contract.topology import Topology
from trainstack.secretnames import looks_secret
from trainstack.spec.model import JobType, Run

HYPERPARAMETERS = "hyperparameters.json"
TRAINING_JOB = "training_job.json"
WITHHELD = "<withheld>"


def training_job(run: Run, topology: Topology, layout: Layout | None = None) -> dict[str, Any]:
    lay = layout or Layout.at()
    comp = run.component
    res = {
        role: {
            "replicas": r.replicas,
            "cpu": r.cpu.text if r.cpu else None,
            "memory": r.memory.text if r.memory else None,
            "gpu": r.gpu,
            "sharedMemory": r.shared_memory.text if r.shared_memory else None,
        }
        for role, r in run.resources.items()
    }
    return {
        "name": run.name,
        "jobName": topology.job_name,
        "description": run.description,
        "experiment": run.experiment,
        "tags": dict(run.tags),
        "component": {
            "name": comp.name,
            "version": comp.version,
            "jobType": comp.job_type.value,
            "image": comp.image,
            "command": comp.command,
            "code": comp.code.kind if comp.code else None,
        },
        "hyperparameters": dict(run.parameters),
        "inputs": {
            n: {"uri": b.uri, "path": lay.input_path(n, b), "mode": b.mode}
            for n, b in run.inputs.items()
        },
        "outputs": {n: {"uri": b.uri, "path": lay.output_dir(n)} for n, b in run.outputs.items()},
        "models": [
            {
                "name": m.name,
                "uri": m.binding.uri,
                "version": m.version,
                "path": lay.model_path(m.name, m.binding),
            }
            for m in run.models
        ],
        "resources": res,
        # Only replicas that can be reached by name (KubeDL's Services); others have no address.
        "cluster": {role: list(addrs) for role, addrs in topology.addressable(run).items()},
        "priority": run.priority,
        "scheduling": run.scheduling.value,
        "spot": None
        if run.spot is None
        else {"bidDiscount": run.spot.bid_discount, "bidPrice": run.spot.bid_price},
        "faultTolerance": None
        if run.fault_tolerance is None
        else {
            "maxRestarts": run.fault_tolerance.max_restarts,
            "unconditional": run.fault_tolerance.unconditional,
            # only when set (spec.faultTolerance.hangTimeout, the launcher's)
            **(
                {}
                if run.fault_tolerance.hang_timeout_seconds is None
                else {"hangTimeoutSeconds": run.fault_tolerance.hang_timeout_seconds}
            ),
        },
        # Only when set: how the command is launched (spec.torchElastic).
        **(
            {}
            if run.torch_elastic is None
            else {"torchElastic": {"maxRestarts": run.torch_elastic.max_restarts}}
        ),
        "timeoutSeconds": run.timeout_seconds,
        "runAsUser": run.run_as_user,
        "imagePullSecret": run.pull_secret,  # a Secret's name, never its content
        "env": {k: WITHHELD if looks_secret(k) else v for k, v in run.env.items()},
        # Where each value comes from (a Secret's name and key), never the value.
        "secretEnv": {
            k: {"secret": ref.secret, "key": ref.key} for k, ref in run.secret_env.items()
        },
    }


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
