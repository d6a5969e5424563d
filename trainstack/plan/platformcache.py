"""The platform's planned outputs, kept across processes: ``plan RUN`` answers the run's
StackReference from them instead of planning the whole platform again in every process.

An entry is only ever used for exactly the inputs it was planned from. Its key is a digest of
the content of everything the platform program reads (``Pulumi.yaml``, ``Pulumi.<env>.yaml``,
the KubeDL CRD folder, the admin kubeconfig: ``trainstack.infra.platform.inputs``), the
environment variables that can change its result, the program's source (every file of the
installed ``trainstack`` package) and the interpreter and the installed distributions that run
it. Any change is a miss and the platform is planned again; nothing expires by time.

One small JSON file per project and environment under the state home
(``cache/platform-outputs/``), replaced atomically; a file that is damaged, foreign, unreadable or
for other inputs is a miss and is rewritten, never an error. An entry someone else could have
written (``trainstack.statetrust``: not the user's, writable by others, a link, in a folder
others can write) is a miss too, said once on stderr: a forged entry would decide what
``policy check`` lets through. It holds the outputs as a run's plan
sees them (secret outputs as the placeholder, never a secret value), the names of the secret
ones and the warnings the program logged (shown again on a hit, as a fresh plan would show
them). ``TRAINSTACK_PLAN_CACHE=off`` neither reads nor writes it; stack config given through the
environment (``PULUMI_CONFIG*``, possibly secrets in clear) is never cached.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from trainstack.envfile import Project, read_env
from trainstack.envnames import PLAN_CACHE_ENV
from trainstack.errors import UserError
from trainstack.infra.platform import inputs

FORMAT = "trainstack.platform-outputs/1"
MAX_ENTRY_BYTES = 8 << 20
# An input past this size is not hashed: the plan runs and nothing is cached (no input the
# program reads comes near it; its own kubeconfig limit is 1 MiB).
MAX_INPUT_BYTES = 256 << 20
# The distributions whose code runs in the plan; their folders' installed-distribution lists
# stand for their versions (one listdir, where importlib.metadata takes ~70 ms).
_RUNTIME_MODULES = ("pulumi", "pulumi_kubernetes", "pulumi_alicloud", "yaml", "grpc", "google")


@dataclass(frozen=True)
class Planned:
    """The platform's outputs as a run's plan reads them (secret ones as the placeholder), the
    names of the secret ones, and the (level, message) of each record the program logged."""

    outputs: dict[str, Any]
    secret: list[str]
    logged: list[tuple[int, str]]


# (project root, env) -> (the input paths, their stat fingerprint, the entry): planning many runs
# in one process reads and hashes the inputs once, then only stats them.
_MEMO: dict[tuple[str, str], tuple[tuple[Path, ...], tuple[Any, ...], Planned]] = {}


def platform_outputs(project: Project, env: str, plan: Callable[[], Planned]) -> Planned:
    """``plan()``'s result for this project and environment: remembered in this process, read
    from the cache when the inputs are the same, else planned (and replayed warnings logged)."""
    environ = dict(os.environ)
    if inputs.config_in_environment(environ):
        return plan()
    memo_key = (str(project.root), env)
    memo = _MEMO.get(memo_key)
    if memo is not None and memo[1] == _fingerprint(memo[0], environ):
        return memo[2]
    # Stat first, then read: a file edited after its stat was taken fails the next comparison.
    fixed = _input_paths(project, env, read=False)
    stat_fixed = _stat_fingerprint(fixed)
    paths = _input_paths(project, env)
    fingerprint = (*stat_fixed, *_fingerprint(paths[len(fixed) :], environ))
    use_disk = os.environ.get(PLAN_CACHE_ENV, "").strip().lower() not in {"off", "0", "no"}
    key = _digest(project, env, paths, environ) if use_disk else None
    found = _read(entry_path(project, env), key) if key is not None else None
    if found is not None:
        for level, message in found.logged:
            logging.getLogger().log(level, message)
    else:
        found = plan()
        # Written only when nothing changed while the program ran: an input edited meanwhile
        # would otherwise file these outputs under a key that describes the edited file.
        if key is not None and key == _digest(project, env, _input_paths(project, env), environ):
            _write(entry_path(project, env), key, found)
    _MEMO[memo_key] = (paths, fingerprint, found)
    return found


@contextmanager
def logged_records() -> Iterator[list[tuple[int, str]]]:
    """What is logged to the root logger meanwhile (Pulumi's mock engine logs the program's
    warnings there), recorded as it is also printed as before."""
    records: list[tuple[int, str]] = []

    def keep(record: logging.LogRecord) -> bool:
        records.append((record.levelno, record.getMessage()))
        return True

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield records
    finally:
        root.removeFilter(keep)


def cache_folder() -> Path:
    from trainstack.statehome import state_home

    return state_home() / "cache" / "platform-outputs"


def entry_path(project: Project, env: str) -> Path:
    """One file per project folder and environment: a new key replaces the old entry, so the
    folder never grows past the pairs planned here."""
    slot = hashlib.sha256(f"{project.root}\0{env}".encode()).hexdigest()[:32]
    return cache_folder() / f"{slot}.json"


# --- the key ------------------------------------------------------------------------------


def _input_paths(project: Project, env: str, *, read: bool = True) -> tuple[Path, ...]:
    """Every file the program may read for this environment (present or not): the project's
    two files, then (``read``: from what the environment file names) the admin kubeconfig and
    each CRD folder with every file in it."""
    root = project.root
    fixed = (root / "Pulumi.yaml", root / f"Pulumi.{env}.yaml")
    if not read:
        return fixed
    try:
        values = read_env(project, env).values
    except UserError:  # the plan itself reports a bad environment file; its bytes key it here
        return fixed
    return (*fixed, *files_read(values, root))


def files_read(values: Mapping[str, str], root: Path) -> tuple[Path, ...]:
    """What the program reads beside the project's two files, for stack config ``values``: each
    CRD folder with every file in it, and the admin kubeconfig."""
    paths: list[Path] = []
    for folder in inputs.crd_folders(values, root):
        try:
            names = sorted(os.listdir(folder))
        except (OSError, ValueError):  # ValueError: a NUL in the name, which the program refuses
            names = []
        paths += [folder, *(folder / name for name in names)]
    try:
        kubeconfig = inputs.admin_kubeconfig_path(values.get(inputs.KUBECONFIG_KEY))
    except RuntimeError:  # ~user that does not exist: the program fails on it the same way
        kubeconfig = None
    if kubeconfig is not None:
        paths.append(kubeconfig.absolute())
    return tuple(paths)


def _fingerprint(paths: Iterable[Path], environ: dict[str, str]) -> tuple[Any, ...]:
    """Each path's stat, then the variables and the working directory (a relative kubeconfig
    path is read from there): equal only while no input can have changed."""
    env_part = (inputs.environment_inputs(environ), os.getcwd())
    return (*_stat_fingerprint(paths), env_part)


def _stat_fingerprint(paths: Iterable[Path]) -> tuple[Any, ...]:
    out: list[Any] = []
    for path in paths:
        try:
            st = os.stat(path)
        except (OSError, ValueError) as err:
            out.append((str(path), getattr(err, "errno", None) or str(err)))
            continue
        when = (st.st_mtime_ns, st.st_ctime_ns)
        out.append((str(path), st.st_mode, st.st_dev, st.st_ino, st.st_size, when))
    return tuple(out)


def _digest(
    project: Project, env: str, paths: Iterable[Path], environ: dict[str, str]
) -> str | None:
    """The entry's key, or None when an input cannot be keyed (past MAX_INPUT_BYTES)."""
    h = hashlib.sha256()

    def add(*parts: object) -> None:
        h.update(json.dumps(parts, default=str).encode() + b"\n")

    add(FORMAT, str(project.root), env, sys.version, sys.platform)
    add(inputs.environment_inputs(environ))
    add(_source_digest(), _runtime_fingerprint())
    for path in paths:
        state = _content_state(path)
        if state is None:
            return None
        add(str(path), state)
    return h.hexdigest()


def _content_state(path: Path) -> str | None:
    """A regular file's sha256, or what stands there instead; None when it is too big."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        return f"error {err.errno}"
    except ValueError:  # a NUL in the path
        return "error nul"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a folder, a FIFO, a device: never read
            return f"mode {stat.S_IFMT(st.st_mode):o}"
        if st.st_size > MAX_INPUT_BYTES:
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError as err:
        return f"error {err.errno}"
    finally:
        os.close(fd)


@functools.cache
def _source_digest() -> str:
    """The program's source: every file of the trainstack package (code and package data)."""
    import trainstack

    return tree_digest(Path(trainstack.__file__).parent)


def tree_digest(root: Path) -> str:
    """Every file under ``root`` (bytecode caches aside), by relative name and content."""
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            h.update((_content_state(Path(path)) or "big").encode() + b"\n")
    return h.hexdigest()


@functools.cache
def _runtime_fingerprint() -> tuple[Any, ...]:
    """The folders the SDKs are installed in, each with its list of installed distributions
    (names carry versions) and its mtime (an install or reinstall there changes it)."""
    folders: set[str] = set()
    for module in _RUNTIME_MODULES:
        try:
            spec = find_spec(module)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            folders.add(os.path.dirname(os.path.abspath(location)))
    out: list[Any] = []
    for folder in sorted(folders):
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith((".dist-info", ".egg-info")))
            out.append((folder, os.stat(folder).st_mtime_ns, names))
        except OSError as err:
            out.append((folder, err.errno))
    return tuple(out)


# --- the file -----------------------------------------------------------------------------


def _read(path: Path, key: str) -> Planned | None:
    """The entry for ``key``; None for anything else (absent, damaged, foreign, another key,
    not trusted: `statetrust`, said once on stderr)."""
    from trainstack import boundedjson, statetrust
    from trainstack.statehome import state_home

    try:
        raw = statetrust.read_trusted(state_home(), path, MAX_ENTRY_BYTES)
        doc = boundedjson.loads(raw) if len(raw) <= MAX_ENTRY_BYTES else None
    except statetrust.UntrustedError as err:
        statetrust.say_once("the plan cache entry", path, err)
        return None
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
        return None
    outputs, secret, logged = doc.get("outputs"), doc.get("secret"), doc.get("logged")
    if not isinstance(outputs, dict) or not isinstance(secret, list):
        return None
    if not isinstance(logged, list) or not all(isinstance(name, str) for name in secret):
        return None
    pairs = [
        (item[0], item[1])
        for item in logged
        if isinstance(item, list)
        and len(item) == 2
        and type(item[0]) is int
        and isinstance(item[1], str)
    ]
    if len(pairs) != len(logged):
        return None
    return Planned(outputs, [str(name) for name in secret], pairs)


def _write(path: Path, key: str, planned: Planned) -> None:
    """Written beside and renamed over the entry (a reader sees the old file or the new one,
    whole); a place that cannot be written leaves the plan uncached, quietly."""
    doc = {
        "format": FORMAT,
        "key": key,
        "outputs": planned.outputs,
        "secret": planned.secret,
        "logged": [list(pair) for pair in planned.logged],
    }
    from trainstack import statetrust
    from trainstack.statehome import state_home

    tmp: str | None = None
    try:
        statetrust.make_folders(state_home(), path.parent)
        # Not into a folder someone else could write: what is filed there is theirs to change.
        if statetrust.folder_problem(state_home(), path.parent) is not None:
            return
        fd, tmp = tempfile.mkstemp(prefix=".entry-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, sort_keys=False)
        os.replace(tmp, path)
        tmp = None
    except (OSError, TypeError, ValueError):
        pass
    finally:
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)
