"""The run's progress clock written while it runs (`progress.jsonl`, read by
trainstack.metrics.progress): the time the replicas' logs first held output, and each change of
the step their metrics reached. Ticked by the usage sampler's thread, once a sample."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from trainstack.contract.rundir import RunDir
from trainstack.metrics.progress import latest_step
from trainstack.regularfile import open_for_writing


class ProgressLog:
    def __init__(self, run_dir: RunDir, logs: Sequence[Path]) -> None:
        self._dir = run_dir
        self._logs = tuple(logs)
        self._output = False
        self._step: float | None = None

    def tick(self) -> None:
        now = round(time.time(), 3)
        lines = []
        if not self._output and any(_size(p) > 0 for p in self._logs):
            self._output = True
            lines.append({"t": now, "output": True})
        step = latest_step(self._dir.metrics, root=self._dir.root)
        if step is not None and step != self._step:
            self._step = step
            lines.append({"t": now, "step": step})
        if not lines:
            return
        # As the usage samples: a full disk loses marks, never the run; never through a link.
        with contextlib.suppress(OSError):
            path = self._dir.progress
            fd = open_for_writing(path.parent, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "a", encoding="utf-8") as out:
                out.writelines(json.dumps(x, sort_keys=True) + "\n" for x in lines)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
