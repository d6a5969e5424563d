"""``trainstack logs`` of a deployed run: its pods' logs while they exist, and after (KubeDL's
cleanPodPolicy and the job's TTL delete them) the logs the launcher shipped to the artifact
store (deploy/logstore.py), read and filtered the same way as a local run's."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack.errors import NotFoundError

if TYPE_CHECKING:
    from trainstack.deploy.jobstate import ReplicaState
    from trainstack.deploy.kube import Cluster
    from trainstack.deploy.service import Located
    from trainstack.deploy.watch import JobRef


def show(
    found: Located,
    *,
    role: str | None,
    index: int | None,
    follow: bool,
    tail: int | None,
    write: Callable[[bytes], None],
    download: Path | None = None,
    store: Path | None = None,
) -> list[Path]:
    """Print the selected replicas' logs (or, with `download`, write each whole into that
    folder and return the files written)."""
    from trainstack.deploy import watch
    from trainstack.deploy.clierrors import cli_errors

    with cli_errors(f"reading the platform of {found.entry.env}", found.settings, ""):
        cluster = watch.connect(found.entry, found.settings, found.command)
    job = watch.JobRef.of(found.entry)
    state = watch.wait_for_pods(cluster, job) if follow else watch.read_state(cluster, job)
    if not state.replicas:  # the pods are gone (or never came): what the launcher shipped
        return _from_store(found, role, index, tail, write, download, store)
    chosen = watch.select(state, role, index)
    if download is not None:
        return _download_pods(cluster, job, chosen, download)
    watch.stream_logs(cluster, job, chosen, follow=follow, tail=tail, write=write)
    return []


def _download_pods(
    cluster: Cluster, job: JobRef, replicas: list[ReplicaState], dest: Path
) -> list[Path]:
    from trainstack.outfile import write_chunks

    def whole(r: ReplicaState) -> Iterator[bytes]:
        yield from cluster.log(job.namespace, r.pod, job.container, follow=False)

    return [write_chunks(dest / f"{r.role}-{r.index}.log", whole(r)) for r in replicas]


def _from_store(
    found: Located,
    role: str | None,
    index: int | None,
    tail: int | None,
    write: Callable[[bytes], None],
    download: Path | None,
    store: Path | None,
) -> list[Path]:
    from trainstack.infra.logplace import LOGS_OUTPUT, REGION_OUTPUT

    entry = found.entry
    uri = entry.outputs.get(LOGS_OUTPUT)
    if not uri:
        raise NotFoundError(
            f"{entry.run}: its job has no pods any more, and its stack records no artifact "
            "store its logs were shipped to",
            hint="a run deployed to an environment without an artifact store (or before "
            "trainstack shipped logs) keeps its logs only as long as its pods; "
            "spec.keepAfterFinished keeps the finished pods longer",
        )
    region = entry.outputs.get(REGION_OUTPUT)
    return read_store(
        str(uri), str(region) if region else None, role, index, tail, write, download, store
    )


def read_store(
    uri: str,
    region: str | None,
    role: str | None,
    index: int | None,
    tail: int | None,
    write: Callable[[bytes], None],
    download: Path | None,
    store: Path | None,
) -> list[Path]:
    """The replica logs shipped to `uri` (a log place: infra/logplace), printed or downloaded:
    for a run whose pods are gone, found through its stack or, once that is destroyed, through
    the registry's record of the run."""
    from trainstack import logview
    from trainstack.deploy import logstore

    endpoint = logstore.oss_endpoint(region)
    with tempfile.TemporaryDirectory(prefix="trainstack-logs-") as tmp:

        def chosen(key: str) -> bool:
            named = logview.replica_named(key)
            return named is not None and (
                (role is None or named[0] == role) and (index is None or named[1] == index)
            )

        stored = logstore.locate(
            uri, mount=store, into=Path(tmp), endpoint=endpoint, replica=chosen
        )
        if stored.cut:
            print(
                f"warning: the store lists more than {logstore.MAX_OBJECTS:,} objects at {uri}; "
                "logs past them are not read",
                file=sys.stderr,
            )
        files = logview.select(stored.folder, role, index, root=stored.root)
        if download is not None:
            return logview.download(files, download)
        logview.show(files, write, tail=tail)
    return []
