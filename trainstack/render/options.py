"""What rendering needs to know about the target cluster; never a secret, only names."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainstack.errors import UserError
from trainstack.platformnames import (
    ACCELERATOR_LABEL,
    CAPACITY_LABEL,
    OSS_SECRET_NAME,
    PULL_SECRET_NAME,
)
from trainstack.spec.model import Binding, FrozenMap
from trainstack.trainer.backend import DEFAULT_OPERATOR, Operator


class RenderError(UserError):
    """A run cannot be turned into manifests for this cluster as configured."""


@dataclass(frozen=True)
class RenderOptions:
    namespace: str = "default"  # when the run names none
    # file:// bindings become hostPath volumes only on a local cluster (kind, minikube, ...).
    local_cluster: bool = False
    oss_endpoint: str = "oss-cn-hangzhou-internal.aliyuncs.com"  # when the URI names none
    # OSS CSI credentials: a Secret holding akId/akSecret (by name), or a RAM role the CSI
    # driver assumes through RRSA (authType: rrsa; the role wins over the Secret). With neither,
    # an oss:// binding is a RenderError, with oss_credentials_hint as its hint when given.
    oss_secret: str | None = OSS_SECRET_NAME
    oss_ram_role: str | None = None
    oss_credentials_hint: str | None = None
    pull_secret: str | None = PULL_SECRET_NAME  # when neither run nor component names one
    # Where local code directories are uploaded (oss://bucket/prefix/); without it, small code
    # directories travel inside a ConfigMap.
    code_bucket: str | None = None
    max_inline_code_bytes: int = 900_000  # a ConfigMap holds at most 1 MiB
    git_sync_image: str | None = None  # KubeDL's default (kubedl/git-sync) when None
    gpu_node_selector: FrozenMap[str, str] = field(
        default_factory=lambda: FrozenMap({ACCELERATOR_LABEL: "gpu"})
    )
    spot_node_selector: FrozenMap[str, str] = field(
        default_factory=lambda: FrozenMap({CAPACITY_LABEL: "spot"})
    )
    ttl_seconds_after_finished: int | None = None
    # Where $METRICS persists (the environment's artifact store); None: an emptyDir, lost with
    # the pod (plain `render` without --env).
    metrics: Binding | None = None
    # Where the launcher ships each replica's log (`<store>/<team>/<run>/logs/`, mounted at
    # /ml/logs/); None: no shipping, the log lives as long as the pod (plain `render`).
    logs: Binding | None = None
    # The operator that runs the environment's jobs: KubeDL's kinds, or a TrainJob for a job
    # type Kubeflow Trainer has a runtime for (render/trainjob.py). Plain `render`: KubeDL.
    operator: Operator = DEFAULT_OPERATOR
    # The LocalQueue every team namespace has on a Kueue environment (the platform's
    # `kueueQueues`): the job carries it as its queue, a KubeDL job's replicas as one pod group
    # (render/queue.py). None: jobs are not queued (plain `render`, `run --local`).
    queue: str | None = None
