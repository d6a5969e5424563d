"""Preparing a run directory (trainstack.contract.rundir, `Layout` here) from what a run names,
and committing its outputs at the end.

Outputs are written inside the run directory and copied to their bindings when the run ends,
whatever the ending: a failed or cancelled run keeps both copies, so nothing is lost.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainstack import launcher
from trainstack.codetree import code_files, copy_tree
from trainstack.contract.rundir import RunDir
from trainstack.errors import UserError
from trainstack.spec.model import Binding, BindingMode, CodeSource, Run, Scheme

# The local runner's name for the run directory it prepares.
Layout = RunDir


class SandboxError(UserError):
    """The run directory cannot be prepared from what the run names."""


@dataclass(frozen=True)
class Committed:
    channel: str
    destination: Path
    files: int
    bytes: int


def prepare(layout: Layout, run: Run, *, resume_from: Layout | None = None) -> None:
    """Create the tree, copy the code, place the inputs and models, and preload outputs that ask
    for it."""
    for path in (layout.config, layout.logs, layout.metrics, layout.home, layout.launcher.parent):
        path.mkdir(parents=True, exist_ok=True)
    for name, text in launcher.program_files().items():
        (layout.launcher.parent / name).write_text(text, encoding="utf-8")
    _copy_code(run, layout.usercode)
    for name, binding in run.inputs.items():
        _place(
            layout.input_dir(name), binding, what=f"input {name!r}", override=f"--input {name}=PATH"
        )
    for model in run.models:
        # Placed exactly like an input; a model's binding is always "download": a copy.
        _place(
            layout.model_dir(model.name),
            model.binding,
            what=f"model {model.name!r}",
            override=f"--model {model.name}=PATH",
        )
    for channel in run.component.outputs:
        target = layout.output_dir(channel.name)
        target.mkdir(parents=True, exist_ok=True)
        if not channel.preload:
            continue
        source = _preload_source(channel.name, run.outputs.get(channel.name), resume_from)
        if source is not None:
            # Checkpoints to resume from: copied in before the first start, and — because the
            # run directory is kept across restarts — still there for every later attempt.
            _merge(source, target)


def commit_targets(run: Run) -> dict[str, tuple[str, bool]]:
    """Where each output is committed: channel → (local path, names one file)."""
    return {name: (b.path, b.is_file) for name, b in run.outputs.items() if b.scheme is Scheme.FILE}


def save_commit_targets(layout: Layout, run: Run) -> None:
    """Record the targets in the run directory, for people to read. Nothing commits from it:
    user code can rewrite it, so the sidecar gets the targets from the runner's pipe."""
    layout.commit_file.write_text(json.dumps(commit_targets(run), indent=2), encoding="utf-8")


def commit_outputs(layout: Layout, run: Run) -> list[Committed]:
    return commit(layout, commit_targets(run))


def commit(layout: Layout, targets: Mapping[str, tuple[str, bool]]) -> list[Committed]:
    """Copy each output channel to its target (changed files only, each atomically)."""
    done = []
    for name, (path, is_file) in targets.items():
        source, target = layout.output_dir(name), Path(path)
        if target.resolve() == source.resolve():
            continue  # bound to its own run-directory folder: nothing to copy
        if is_file:
            files, size = _copy_file(source / target.name, target)
        else:
            files, size = _merge(source, target)
        done.append(Committed(name, target, files, size))
    return done


def tree_size(path: Path) -> tuple[int, int]:
    """(files, bytes) under `path`, following no links."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
                files += 1
            except OSError:
                continue
    return files, size


def _copy_code(run: Run, target: Path) -> None:
    code = run.component.code
    if code is None:
        target.mkdir(parents=True, exist_ok=True)
        return
    if code.kind is not CodeSource.LOCAL or code.path is None:
        where = code.uri or (code.git.url if code.git else code.kind)
        raise SandboxError(
            f"component code at {where} cannot be fetched by a local run",
            hint="check the code out to a directory and point the component's `code:` at it",
        )
    if not code.path.is_dir():
        raise SandboxError(f"component code directory {code.path} does not exist")
    # The same walk `render` packs from: the same files, links refused or followed alike.
    boundary = run.component.source.resolve().parent if run.component.source else None
    copy_tree(code_files(code.path, boundary), target)


def _place(channel_dir: Path, binding: Binding, *, what: str, override: str) -> None:
    """Put a read binding (an input channel or a model) at `channel_dir`."""
    source = Path(binding.path)
    if not source.exists():
        raise SandboxError(
            f"{what}: {source} does not exist", hint=f"pass {override} to use another location"
        )
    if binding.is_file != source.is_file():
        named, found = ("a file", "a directory") if binding.is_file else ("a directory", "a file")
        raise SandboxError(
            f"{what}: {binding.uri} names {named} but {source} is {found}",
            hint=f"pass {override} to bind it as it is",
        )
    # "mount" reads data in place, as a network mount would: a link. "download" gets a copy the
    # job may modify freely, as a pre-start download would.
    copy = binding.mode is BindingMode.DOWNLOAD
    if binding.is_file:
        channel_dir.mkdir(parents=True, exist_ok=True)
        target = channel_dir / (binding.filename or source.name)
        if copy:
            shutil.copy2(source, target)
        else:
            target.symlink_to(source)
        return
    channel_dir.parent.mkdir(parents=True, exist_ok=True)
    if copy:
        shutil.copytree(source, channel_dir, symlinks=True)
    else:
        channel_dir.symlink_to(source, target_is_directory=True)


def _preload_source(channel: str, binding: Binding | None, resume: Layout | None) -> Path | None:
    if resume is not None:
        earlier = resume.output_dir(channel)
        if earlier.is_dir():
            return earlier
    if binding is not None and binding.scheme is Scheme.FILE and not binding.is_file:
        bound = Path(binding.path)
        if bound.is_dir():
            return bound
    return None


def _merge(source: Path, target: Path) -> tuple[int, int]:
    """Copy the files of `source` into `target`, replacing changed ones; returns (files, bytes)."""
    files = size = 0
    if not source.is_dir():
        return files, size
    for dirpath, _dirs, names in os.walk(source):
        rel = Path(dirpath).relative_to(source)
        for name in names:
            copied, nbytes = _copy_file(Path(dirpath) / name, target / rel / name)
            files += copied
            size += nbytes
    return files, size


def _copy_file(source: Path, target: Path) -> tuple[int, int]:
    try:
        st = source.stat()
    except FileNotFoundError:
        return 0, 0
    try:
        tt = target.stat()
        if tt.st_size == st.st_size and tt.st_mtime_ns == st.st_mtime_ns:
            return 1, st.st_size  # already there (a preloaded checkpoint that did not change)
    except FileNotFoundError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    # Copy beside the target and rename over it, so a reader never sees half a file.
    partial = target.with_name(f".{target.name}.trainstack-partial")
    shutil.copy2(source, partial)
    os.replace(partial, target)
    return 1, st.st_size
