"""The `/ml` tree a training process sees (Alibaba PAI Designer custom components: the `/ml`
directory layout), rooted anywhere for local runs.

Directories end with '/', as PAI Designer's `PAI_INPUT_TRAIN=/ml/input/data/train/` does; a binding
that names one file points at that file inside its channel directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from trainstack.spec.model import Binding

DEFAULT_ROOT = PurePosixPath("/ml")

# The tree's shape, relative to its root: the one definition. The container's paths (`Layout`,
# strings under /ml), a local run's directory (trainstack.local.sandbox, Paths under the run
# directory) and the rendered mounts all derive from these.
CODE = "usercode"
CONFIG = "input/config"
INPUT_DATA = "input/data"
INPUT_MODEL = "input/model"
OUTPUT = "output"
# Not under output/: an output channel may itself be called "metrics".
METRICS = "metrics"
# trainstack's in-container launcher (trainstack.launcher): a ConfigMap in a pod, a copy locally.
LAUNCHER = "launcher"
# Each replica's log, `<role>-<index>.log`: a local run's logs/; in a pod, where the launcher
# ships it (the artifact store's `<team>/<run>/logs/`, when the environment has a store).
LOGS = "logs"
# A writable home for a replica whose user the image does not know (the runtime then sets
# HOME=/, which that user cannot write): an emptyDir in a pod, a folder of a local run.
HOME = "home"
# Cluster only: where the prepare init container sees the sources it copies from.
STAGING = ".staging"


@dataclass(frozen=True)
class Layout:
    root: str  # without a trailing '/'

    @classmethod
    def at(cls, root: PurePosixPath | Path | str = DEFAULT_ROOT) -> Layout:
        text = str(root)
        return cls(text.rstrip("/") or "/")

    def _dir(self, *parts: str) -> str:
        return "/".join((self.root, *parts)) + "/"

    @property
    def code(self) -> str:
        return self._dir(CODE)

    @property
    def config(self) -> str:
        return self._dir(CONFIG)

    @property
    def metrics(self) -> str:
        return self._dir(METRICS)

    @property
    def launcher(self) -> str:
        return self._dir(LAUNCHER)

    @property
    def logs(self) -> str:
        return self._dir(LOGS)

    @property
    def home(self) -> str:
        return self._dir(HOME)

    @property
    def staging(self) -> str:
        return self._dir(STAGING)

    def input_dir(self, channel: str) -> str:
        return self._dir(INPUT_DATA, channel)

    def output_dir(self, channel: str) -> str:
        return self._dir(OUTPUT, channel)

    def model_dir(self, name: str) -> str:
        return self._dir(INPUT_MODEL, name)

    def input_path(self, channel: str, binding: Binding) -> str:
        return _in(self.input_dir(channel), binding)

    def model_path(self, name: str, binding: Binding) -> str:
        return _in(self.model_dir(name), binding)


def _in(directory: str, binding: Binding) -> str:
    return directory + binding.filename if binding.filename else directory
