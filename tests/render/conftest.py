"""Render cases: (run file, options) per job kind, binding scheme and code source."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trainstack.render import RenderOptions
from trainstack.spec import load_run
from trainstack.spec.model import Run
from trainstack.trainer import Operator

ON_TRAINER = RenderOptions(operator=Operator.TRAINER)
ON_KUEUE = RenderOptions(queue="trainstack")

HERE = Path(__file__).parent
SPECS = HERE / "specs"
GOLDEN = HERE / "golden"


@dataclass(frozen=True)
class Case:
    name: str
    run_file: str
    options: RenderOptions = field(default_factory=RenderOptions)

    def run(self) -> Run:
        return load_run(SPECS / self.run_file)


CASES = [
    # one per job kind (each also covers a code source)
    Case("kind-tensorflow", "tf.run.yaml"),  # git code, oss:// with endpoint, nas://
    Case("kind-pytorch", "pytorch.run.yaml"),  # local code packed in a ConfigMap, pvc://
    Case("kind-xgboost", "xgboost.run.yaml"),  # oss:// code, an oss:// file input
    Case("kind-elasticbatch", "elasticbatch.run.yaml"),  # no code
    Case("kind-mpi", "mpi.run.yaml"),  # git code, unconditional restarts
    Case(
        "kind-custom",
        "custom.run.yaml",  # local code via a code bucket, a model version
        RenderOptions(code_bucket="oss://acme-code/trainstack/"),
    ),
    Case("code-git-custom", "custom-git.run.yaml"),  # git without KubeDL: our git-sync
    # one per binding scheme: a mounted dir, a downloaded file, a preload output
    Case("binding-oss", "bindings-oss.run.yaml"),
    Case(
        "binding-oss-ram-role",
        "bindings-oss.run.yaml",
        RenderOptions(oss_secret=None, oss_ram_role="trainstack-jobs"),
    ),
    Case("binding-nas", "bindings-nas.run.yaml"),
    Case("binding-pvc", "bindings-pvc.run.yaml"),
    Case("binding-file", "bindings-file.run.yaml", RenderOptions(local_cluster=True)),
    # secretEnv: secretKeyRefs on every replica, never a value
    Case("secret-env", "secret-env.run.yaml"),
    # strings a YAML 1.1 reader would misread unquoted (y, 1e-05, 0o17, 1:20, ~, <<, ...)
    Case("yaml11-strings", "yaml11.run.yaml"),
    # torchElastic: the command under torchrun's agent, the master hosting the rendezvous
    Case("torch-elastic", "torch-elastic.run.yaml"),
    # a Trainer environment's TrainJobs: local code folded into the node's command, spot GPUs
    Case("trainer-pytorch", "pytorch.run.yaml", ON_TRAINER),
    Case("trainer-xgboost", "trainer-xgboost.run.yaml", ON_TRAINER),  # a deadline, oss:// input
    # an MPI run's own TrainingRuntime beside its TrainJob: git code through our git-sync
    Case("trainer-mpi", "mpi.run.yaml", ON_TRAINER),
    # a Kueue environment: the job in its team's queue, a KubeDL job's replicas one pod group
    Case("queued-tensorflow", "tf.run.yaml", ON_KUEUE),
    Case("queued-mpi", "mpi.run.yaml", ON_KUEUE),
    Case("queued-custom", "custom.run.yaml", ON_KUEUE),
]


# What renders for KubeDL (or as a batch Job): a Trainer environment's TrainJobs carry no pod
# template or KubeDL run policy of their own (tests/trainer covers them).
KUBEDL_CASES = [c for c in CASES if c.options is not ON_TRAINER]


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]
