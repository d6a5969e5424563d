"""`usage.jsonl` (written by trainstack.local.usage) as time series per replica, for charts,
CSV export and idle detection. Lines that cannot be read are skipped, as in the summary, and a
file that cannot be (a directory, a FIFO) shows no usage."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainstack import boundedjson
from trainstack.regularfile import bounded_lines, open_within

if TYPE_CHECKING:
    # numpy is imported where series are built: a run without samples (the summary of a short
    # run, `runs show` of one) reads none and does not pay for it.
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GpuSeries:
    index: int
    t: Floats
    util_percent: Floats
    mem_used_bytes: Floats


@dataclass(frozen=True)
class ReplicaUsage:
    replica: str
    t: Floats  # seconds since the run's first sample
    cpu_percent: Floats
    rss_bytes: Floats
    gpus: tuple[GpuSeries, ...]


def with_unsampled(
    found: tuple[ReplicaUsage, ...], replicas: list[str]
) -> tuple[ReplicaUsage, ...]:
    """``found`` plus an empty series for each replica of the run that has no sample (one that
    ended before the sampler's first look): its chart then says so, instead of its siblings
    having charts and it none."""
    import numpy as np

    have = {u.replica for u in found}
    empty = np.array([], dtype=float)
    missing = [
        ReplicaUsage(r, empty, empty, empty, ()) for r in sorted(set(replicas)) if r not in have
    ]
    return tuple(sorted((*found, *missing), key=lambda u: u.replica))


def read(path: Path, *, root: Path | None = None) -> tuple[ReplicaUsage, ...]:
    """`path`, a usage.jsonl below run directory `root` (by default its folder), read without
    following a link out of `root`."""
    return series(samples(path, root=root))


Samples = dict[str, list[dict[str, object]]]


def span(found: Samples) -> float:
    """Seconds from the first sample to the last, over every replica (0 without samples)."""
    times = [float(str(s["t"])) for rows in found.values() for s in rows]
    return max(times) - min(times) if times else 0.0


def samples(path: Path, *, root: Path | None = None) -> Samples:
    """The file's readable samples by replica, as parsed (no numpy yet)."""
    root = path.parent if root is None else root
    samples: Samples = {}
    try:
        with open_within(root, path) as fh:
            for line in bounded_lines(fh):  # a piece of an over-long line is not JSON: skipped
                # A line that is not UTF-8 is a ValueError here, skipped as any bad line.
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    sample = boundedjson.loads(line)
                    float(sample["t"]), float(sample["cpu_percent"]), int(sample["rss_bytes"])
                    samples.setdefault(str(sample["replica"]), []).append(sample)
    except OSError:  # missing, or not a file at all (a directory, a FIFO): no usage to show
        return {}
    return samples


def series(samples: Samples) -> tuple[ReplicaUsage, ...]:
    """Samples as time series per replica, times in seconds since the first sample."""
    if not samples:
        return ()
    import numpy as np

    start = min(float(str(s["t"])) for rows in samples.values() for s in rows)
    out = []
    for replica in sorted(samples):
        rows = sorted(samples[replica], key=lambda s: float(str(s["t"])))
        t = np.array([float(str(s["t"])) - start for s in rows])
        gpus: dict[int, list[tuple[float, float, float]]] = {}
        for ts, s in zip(t, rows, strict=True):
            entries = s.get("gpus")
            for g in entries if isinstance(entries, list) else []:
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    gpus.setdefault(int(g["index"]), []).append(
                        (float(ts), float(g["util_percent"]), float(g["mem_used_bytes"]))
                    )
        out.append(
            ReplicaUsage(
                replica,
                t,
                np.array([float(str(s["cpu_percent"])) for s in rows]),
                np.array([float(str(s["rss_bytes"])) for s in rows]),
                tuple(
                    GpuSeries(i, *(np.array(col) for col in zip(*gpus[i], strict=True)))
                    for i in sorted(gpus)
                ),
            )
        )
    return tuple(out)
