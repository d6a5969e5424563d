"""A run's job into its team's queue on a Kueue environment (docs/queues.md): the queue label on
the job (a batch Job, a TrainJob or a KubeDL job), and on every replica's pod template of a KubeDL
job the plain-pod group Kueue admits as one Workload (trainstack.kueue.podgroup): the job's name
as the group, every pod the operator will create as its count."""

from __future__ import annotations

from dataclasses import replace

from trainstack.kubedl.record import JobKind
from trainstack.kueue.api import QUEUE_LABEL
from trainstack.kueue.podgroup import group_metadata
from trainstack.render.parts import Replica
from trainstack.spec.model import Run


def group_total(run: Run, kind: JobKind) -> int:
    """Every pod KubeDL creates for the run: the replicas of each role that gets pods."""
    return sum(res.replicas for role, res in run.resources.items() if kind.role(role).gets_pod)


def queued_labels(labels: dict[str, str], queue: str | None) -> dict[str, str]:
    return labels if queue is None else {**labels, QUEUE_LABEL: queue}


def grouped(
    run: Run, kind: JobKind, job: str, replicas: tuple[Replica, ...], queue: str | None
) -> tuple[Replica, ...]:
    """The replicas with their pod group's labels and annotations (KubeDL kinds only: a batch
    Job and a TrainJob are admitted through their own integrations)."""
    if queue is None or not kind.by_kubedl:
        return replicas
    labels, annotations = group_metadata(job, group_total(run, kind), queue)
    return tuple(
        replace(
            r,
            pod=replace(
                r.pod,
                labels={**r.pod.labels, **labels},
                annotations={**(r.pod.annotations or {}), **annotations},
            ),
        )
        for r in replicas
    )
