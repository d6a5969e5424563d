"""Code delivery into /ml/usercode/, per source:

- git: KubeDL's `kubedl.io/git-sync-config` annotation; KubeDL adds a git-sync init container
  and mounts the checkout at `<workingDir>/<destPath>` = /ml/usercode. A custom (batch/v1) Job has
  no KubeDL, so the same git-sync container is added here.
- oss://: the prefix is mounted read-only and copied in by the prepare init container.
- a local directory: with a code bucket, it is expected (uploaded by the deployer) at
  `<bucket>/<component>/<version>/<digest>/` and fetched like oss://; without one, a directory
  small enough is packed (deterministic tar.gz) into a ConfigMap and unpacked before start.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import MappingProxyType

from trainstack.contract.layout import CODE, Layout
from trainstack.kubedl import job_kind
from trainstack.kubedl.pods import GIT_SYNC_ANNOTATION
from trainstack.render.codepack import TooLarge, archive
from trainstack.render.options import RenderError, RenderOptions
from trainstack.render.parts import (
    DEFAULT_WORKING_DIR,
    ML,
    STAGING,
    ConfigMap,
    Container,
    Env,
    Mount,
    PodParts,
)
from trainstack.render.pod import kubelet_escape
from trainstack.render.storage import Storage
from trainstack.spec import values
from trainstack.spec.model import Code, CodeSource, GitCode, Run
from trainstack.trainer.backend import Operator

GIT_SYNC_IMAGE = "kubedl/git-sync:v1"  # KubeDL's default
GIT_ROOT = "/code"
# KubeDL mounts the checkout at path.Join(workingDir, destPath): with workingDir the tree's root,
# destPath is the code folder's name in it.
GIT_DEST = CODE
CODE_VOLUME = CODE  # named for the folder it mounts
ARCHIVE = "code.tar.gz"


def code_uri(run: Run, options: RenderOptions) -> str | None:
    """Where a local code directory must be uploaded, when a code bucket is configured."""
    code = run.component.code
    if (
        code is None
        or code.kind is not CodeSource.LOCAL
        or not options.code_bucket
        or code.path is None
    ):
        return None
    digest = archive(code.path, component_dir(run)).digest
    comp = run.component
    return f"{options.code_bucket.rstrip('/')}/{comp.name}/{comp.version}/{digest}/"


def component_dir(run: Run) -> Path | None:
    """The folder links in the code directory may not leave (None: the code directory)."""
    source = run.component.source
    return source.resolve().parent if source is not None else None


def plan_code(run: Run, job: str, storage: Storage, options: RenderOptions) -> PodParts:
    """What delivers the run's code to /ml/usercode/ (and beside the job, a ConfigMap)."""
    code = run.component.code
    target = Layout.at().code
    if code is not None and code.kind is CodeSource.GIT and code.git is not None:
        return _git(run, code.git, options)
    if code is not None and code.kind is CodeSource.OSS and code.uri:
        return storage.attach(
            values.binding(code.uri),
            "code",
            target,
            read_only=True,
            download=True,
            writable_copy=True,
        )
    if code is not None and code.kind is CodeSource.LOCAL:
        uri = code_uri(run, options)
        if uri is not None:
            return storage.attach(
                values.binding(uri),
                "code",
                target,
                read_only=True,
                download=True,
                writable_copy=True,
            )
        return _packed(run, code, job, storage, options)
    return PodParts(
        volumes=({"name": CODE_VOLUME, "emptyDir": {}},),  # so the command can cd
        mounts=(Mount(CODE_VOLUME, target),),
    )


def _git(run: Run, git: GitCode, options: RenderOptions) -> PodParts:
    # Every user value reaches the git-sync container as an env value, which the kubelet expands
    # ($(NAME)); `$` → `$$` gives git-sync exactly the text of the spec. KubeDL copies the
    # annotation's source/branch/revision into env values as they are (KubeDL v0.5.0
    # pkg/code_sync/git_sync_handler.go, setSyncOptsEnvs), so they are escaped there too.
    git = GitCode(
        kubelet_escape(git.url),
        git.branch and kubelet_escape(git.branch),
        git.commit and kubelet_escape(git.commit),
    )
    config: dict[str, str] = {"source": git.url}
    if git.branch:
        config["branch"] = git.branch
    if git.commit:
        config["revision"] = git.commit
    else:
        config["depth"] = "1"
    config["destPath"] = GIT_DEST
    if options.git_sync_image:
        config["image"] = options.git_sync_image
    # KubeDL mounts the checkout at path.Join(workingDir, destPath).
    working_dir = ML.root
    # KubeDL's git-sync; a plain Job, and any pod on Kubeflow Trainer (where no KubeDL reads
    # the annotation), gets an init container.
    if job_kind(run.job_type).by_kubedl and options.operator is not Operator.TRAINER:
        return PodParts(
            annotations=MappingProxyType({GIT_SYNC_ANNOTATION: json.dumps(config, sort_keys=True)}),
            working_dir=working_dir,
        )
    env = [
        Env("GIT_SYNC_REPO", git.url),
        Env("GIT_SYNC_ONE_TIME", "true"),
        Env("GIT_SYNC_MAX_SYNC_FAILURES", "3"),
    ]
    if git.branch:
        env.append(Env("GIT_SYNC_BRANCH", git.branch))
    if git.commit:
        env.append(Env("GIT_SYNC_REV", git.commit))
    else:
        env.append(Env("GIT_SYNC_DEPTH", "1"))
    env += [Env("GIT_SYNC_ROOT", GIT_ROOT), Env("GIT_SYNC_DEST", GIT_DEST)]
    return PodParts(
        volumes=({"name": "git-sync", "emptyDir": {}},),
        init_containers=(
            Container(
                name="git-sync-code",
                image=options.git_sync_image or GIT_SYNC_IMAGE,
                command=None,
                args=None,
                working_dir=None,
                env=tuple(env),
                ports=None,
                resources=None,
                mounts=(Mount("git-sync", GIT_ROOT).k8s(),),
            ),
        ),
        mounts=(Mount("git-sync", DEFAULT_WORKING_DIR, sub_path=GIT_DEST),),
        working_dir=working_dir,
    )


def _packed(run: Run, code: Code, job: str, storage: Storage, options: RenderOptions) -> PodParts:
    assert code.path is not None
    if not code.path.is_dir():
        raise RenderError(
            f"component {run.component.ref}: code directory {code.path} does not exist"
        )
    try:
        pack = archive(code.path, component_dir(run), limit=options.max_inline_code_bytes)
    except TooLarge:
        raise RenderError(
            f"component {run.component.ref}: code directory {code.path} packs to more than the "
            f"{options.max_inline_code_bytes // 1024} KiB a ConfigMap can carry",
            hint="configure a code bucket (--code-bucket oss://bucket/prefix/) to upload it to, "
            "or point `code:` at oss://… or a git repository",
        ) from None
    name = f"{job}-code"
    staged = f"{STAGING}/code-archive"
    return PodParts(
        config_maps=(
            ConfigMap(
                name,
                storage.ns,
                dict(storage.labels),
                binary_data={ARCHIVE: base64.b64encode(pack.data).decode()},
            ),
        ),
        volumes=(
            {"name": "code-archive", "configMap": {"name": name}},
            {"name": CODE_VOLUME, "emptyDir": {}},
        ),
        mounts=(Mount(CODE_VOLUME, Layout.at().code),),
        stage_mounts=(Mount("code-archive", staged, True), Mount(CODE_VOLUME, DEFAULT_WORKING_DIR)),
        stage_steps=(f"tar -xzf {staged}/{ARCHIVE} -C {DEFAULT_WORKING_DIR}",),
    )
