"""What an install without the `cluster` extra lacks, and the one error that says so.

`pip install trainstack` is enough for `run --local`, `runs`, `metrics`, `report`, `sweep
--local` and the console; planning, policy checks, deploying and reading deployed runs need
Pulumi, its providers and the Kubernetes client (`pip install 'trainstack[cluster]'`). A verb
that reaches one of them without it stops with `missing_extra`'s error instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from trainstack.errors import MissingExtraError

CLUSTER_EXTRA = "cluster"
# The import names of the cluster extra's distributions (pyproject.toml; tests/test_extras.py
# holds the two to each other), and those their own imports bring (grpc, with pulumi).
CLUSTER_MODULES = frozenset(
    {
        "pulumi",
        "pulumi_kubernetes",
        "pulumi_alicloud",
        "pulumi_command",
        "pulumi_policy",
        "kubernetes",
        "urllib3",
        "oss2",
        "celpy",
        "grpc",
    }
)


def missing_extra(err: ModuleNotFoundError) -> MissingExtraError | None:
    """The error for a module of the cluster extra that is not installed; None for any other
    missing module (a bug, which keeps its traceback)."""
    root = (err.name or "").split(".")[0]
    if root not in CLUSTER_MODULES:
        return None
    return MissingExtraError(
        f"this needs trainstack's {CLUSTER_EXTRA} extra, which is not installed (no module "
        f"{root!r})",
        hint=f"pip install 'trainstack[{CLUSTER_EXTRA}]': Pulumi, its providers and the "
        "Kubernetes client, for plan, policy check, deploy and deployed runs; run --local, "
        "runs, metrics, report, sweep --local and ui need none of it",
    )


@contextmanager
def cluster_needed() -> Iterator[None]:
    """Around what reaches the cluster extra from a place that goes on without it (the
    console's page of a deployed run): its absence as `missing_extra`'s UserError."""
    try:
        yield
    except ModuleNotFoundError as err:
        missing = missing_extra(err)
        if missing is None:
            raise
        raise missing from None
