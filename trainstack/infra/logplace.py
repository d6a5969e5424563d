"""Where a deployed run's replica logs live in the platform's artifact store, and which of them
expire: the one place the renderer (where the launcher ships them), the platform (the OSS
lifecycle rule that expires them) and `trainstack logs` (where it reads them back) agree on.

- kept logs — `spec.keepLogs: true`, or a store that cannot expire anything (a claim, a NAS):
  `<store>/<team>/<run>/logs/<role>-<index>.log`, beside the run's outputs;
- expiring logs, on an OSS store: `<store>/<team>/_logs/<run>/<role>-<index>.log`.

Why two places: an OSS lifecycle rule selects objects by a literal key prefix (or by object
tags, which ossfs cannot set on what it writes), so logs that expire must share one prefix per
team; `<team>/<run>/logs/` has the run's name in the middle. `_logs` cannot be a run's name (a
DNS-1123 label starts with a letter or digit), and it stays under `<team>/`, where the team's
RAM role and the platform's volume policy let its pods write.
"""

from __future__ import annotations

from trainstack.contract.layout import LOGS
from trainstack.spec.model import Binding
from trainstack.spec.schemes import storage_scheme
from trainstack.spec.values import binding

# Where a deployed run's logs are kept, and the region of its store (deploy/logstore.py): the
# run stack's outputs and tags.
LOGS_OUTPUT = "logs"
REGION_OUTPUT = "region"
KEPT_DIR = LOGS  # the run tree's logs/, kept under the store
EXPIRING_DIR = "_logs"
# How long expiring logs stay (Huawei ModelArts keeps a job's history logs 30 days).
DEFAULT_RETENTION_DAYS = 30


def expires(store: str) -> bool:
    """Whether the store can expire logs (OSS, through a lifecycle rule: spec/schemes.py)."""
    record = storage_scheme(store)
    return record is not None and record.expires


def log_place(store: str, team: str, run: str, *, keep: bool) -> Binding:
    """The folder the run's replica logs go to (`store` ends with '/')."""
    if expires(store) and not keep:
        return binding(f"{store}{team}/{EXPIRING_DIR}/{run}/", kind="directory")
    return binding(f"{store}{team}/{run}/{KEPT_DIR}/", kind="directory")


def expiring_prefix(team: str, store_path: str = "") -> str:
    """The key prefix of a team's expiring logs in the store's bucket, for its lifecycle rule
    (`store_path`: the store's folder in the bucket, '' for the bucket's root)."""
    folder = store_path.strip("/")
    return f"{folder + '/' if folder else ''}{team}/{EXPIRING_DIR}/"


def run_folder(logs: str) -> str | None:
    """The run's folder in the store (`<store><team>/<run>/`, where its metrics and outputs
    are) from its logs place as `log_place` made it, kept or expiring; None for another."""
    if logs.endswith(f"/{KEPT_DIR}/"):
        return logs[: -len(KEPT_DIR) - 1]
    head, sep, run = logs.rstrip("/").rpartition(f"/{EXPIRING_DIR}/")
    if sep and run and "/" not in run:
        return f"{head}/{run}/"
    return None
