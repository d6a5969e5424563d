"""A run directory on this machine: the `/ml` tree of the in-container contract rooted at the
run's folder (trainstack.contract.layout), and what only a local run keeps beside it. The one
spelling of its paths for everything that writes or reads one: the local runner, the reports,
the console, `logs`, sweeps.

    <run dir>/usercode/            the component's code (the replicas' working directory)
    <run dir>/input/config/        hyperparameters.json, training_job.json, …
    <run dir>/input/data/<ch>/     input channels (a link to the bound path, or a copy)
    <run dir>/input/model/<name>/  models (spec.models), copied: $MODEL, $MODEL_<NAME>
    <run dir>/output/<ch>/         output channels, committed to their file:// binding at the end
    <run dir>/logs/<role>-<i>.log  one log per replica
    <run dir>/metrics/             $METRICS
    <run dir>/launcher/launcher.py the in-container launcher (/ml/launcher/ in a pod)
    <run dir>/logs/<role>-<i>.restarts.jsonl  the launcher's restarts in place (hangs)
    <run dir>/usage.jsonl          the replicas' sampled resource use
    <run dir>/progress.jsonl       when the first output came and each step the metrics reached
    <run dir>/outputs.json         where each output was committed
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainstack import launcher
from trainstack.contract import layout as tree
from trainstack.contract.files import TRAINING_JOB

USAGE = "usage.jsonl"
PROGRESS = "progress.jsonl"
# Each metric series' last and best value, kept beside the run so a listing reads a few bytes, not
# every point (trainstack.metrics.summary).
METRICS_SUMMARY = "metrics-summary.json"
COMMIT_FILE = "outputs.json"
# The namespaces sandbox's (trainstack.local.podns): every pod's /etc/hosts and
# /etc/resolv.conf, and where the pods' root file system is put together.
HOSTS = "hosts"
RESOLV = "resolv.conf"
POD_ROOT = "pod-root"


@dataclass(frozen=True)
class RunDir:
    """A run directory: the contract's tree (trainstack.contract.layout) under `root`, plus what
    only a local run keeps there (logs, usage, the commit record, the sandbox's files)."""

    root: Path

    @property
    def usercode(self) -> Path:
        return self.root / tree.CODE

    @property
    def config(self) -> Path:
        return self.root / tree.CONFIG

    @property
    def logs(self) -> Path:
        return self.root / tree.LOGS

    @property
    def metrics(self) -> Path:
        return self.root / tree.METRICS

    @property
    def training_job(self) -> Path:
        return self.config / TRAINING_JOB

    @property
    def home(self) -> Path:
        return self.root / tree.HOME

    @property
    def usage(self) -> Path:
        return self.root / USAGE

    @property
    def progress(self) -> Path:
        """When the replicas first wrote output, and each step their metrics reached (the
        goodput ledger's clock: the series files keep steps but no times)."""
        return self.root / PROGRESS

    @property
    def metrics_summary(self) -> Path:
        return self.root / METRICS_SUMMARY

    @property
    def hosts(self) -> Path:
        """Every replica's /etc/hosts when each is a host of its own (trainstack.local.podns)."""
        return self.root / HOSTS

    @property
    def resolv(self) -> Path:
        """Every replica's /etc/resolv.conf when each is a host of its own."""
        return self.root / RESOLV

    @property
    def pod_root(self) -> Path:
        """Where the pods' root file system is put together, in their mount namespace only (an
        empty directory on this machine)."""
        return self.root / POD_ROOT

    @property
    def commit_file(self) -> Path:
        return self.root / COMMIT_FILE

    def input_dir(self, channel: str) -> Path:
        return self.root / tree.INPUT_DATA / channel

    def model_dir(self, name: str) -> Path:
        return self.root / tree.INPUT_MODEL / name

    def output_dir(self, channel: str) -> Path:
        return self.root / tree.OUTPUT / channel

    def log(self, role: str, index: int) -> Path:
        return self.logs / f"{role}-{index}.log"

    @property
    def launcher(self) -> Path:
        """The in-container launcher's copy, where a pod has it under /ml (trainstack.launcher)."""
        return self.root / tree.LAUNCHER / launcher.FILE

    def restarts(self, role: str, index: int) -> Path:
        """What the launcher records of a replica's restarts in place (hangs)."""
        return self.logs / f"{role}-{index}{launcher.EVENTS_SUFFIX}"
