"""``trainstack kubedl mirror``: fill the platform's KubeDL CRD folder from a pinned release
(``--release trainer`` / ``jobset``: a Trainer environment's folders)."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.errors import UserError


@click.group()
def kubedl() -> None:
    """KubeDL's CRDs for the platform program (docs/platform.md)."""


@kubedl.command()
@click.option(
    "--release",
    "release_name",
    type=click.Choice(["kubedl", "trainer", "jobset", "kueue"]),
    default="kubedl",
    show_default=True,
    help="whose CRDs: KubeDL's, or on a trainstack:operator trainer environment Kubeflow "
    "Trainer's (trainer:crdSource) and JobSet's (jobset:crdSource), or Kueue's (kueue:crdSource)",
)
@click.option(
    "--from",
    "source",
    required=True,
    help="a checkout or unpacked release of kubedl-io/kubedl at the pinned tag, a folder "
    "of CRD files, or an https URL under which the files are served",
)
@click.option(
    "--to",
    "folder",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="the crdSource folder, e.g. platform/kubedl/v0.5.0 or platform/trainer/v2.3.0",
)
@click.option(
    "--write-lock",
    "lock_version",
    default=None,
    metavar="VERSION",
    help="trust --from and (re)write the lock for VERSION (a new KubeDL release)",
)
def mirror(source: str, folder: Path, lock_version: str | None, release_name: str) -> None:
    """Copy the locked CRD files into FOLDER, each verified against its sha256."""
    from trainstack.infra.platform.kubedl_source import KUBEDL_RELEASE
    from trainstack.infra.platform.kubedl_source import mirror as do_mirror
    from trainstack.infra.platform.kueue_release import KUEUE_RELEASE
    from trainstack.infra.platform.trainer_release import JOBSET_RELEASE, TRAINER_RELEASE

    releases = (KUEUE_RELEASE, KUBEDL_RELEASE, TRAINER_RELEASE, JOBSET_RELEASE)
    release = {r.name: r for r in releases}[release_name]
    try:
        written = do_mirror(source, folder, write_lock_version=lock_version, release=release)
    except OSError as err:  # a file where a folder belongs, a read-only place, a full disk
        where = err.filename or folder
        raise UserError(
            f"kubedl mirror: {where}: {err.strerror or err}",
            hint=f"--to must name a folder that can be created or written ({folder})",
        ) from None
    for path in written:
        click.echo(f"verified {path}")
    click.echo(f"{len(written)} CRD files in {folder}, matching {folder / release.lock_name}")
