"""Each scheduled pod of a deployed job as the API shows it now (a
trainstack.metrics.podtimes.PodLife each): when the scheduler bound it, when its containers had
all started and when they finished, what it requests, and the hang timeout its launcher was
given. trainstack.deploy.podrecords merges these sightings into the run's `pods.json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainstack.deploy.apijson import Reader
from trainstack.metrics import podtimes
from trainstack.metrics.podtimes import PodLife

if TYPE_CHECKING:
    from trainstack.deploy.jobstate import ReplicaState

_GIB = float(1 << 30)
_ENDED = ("Succeeded", "Failed")  # pod phases after which it holds nothing


def observe(
    pods: Sequence[Any], replicas: Sequence[ReplicaState], now: float
) -> tuple[PodLife, ...]:
    """Each scheduled pod's lifetime as the API shows it now (a pod not yet bound to a node
    holds nothing and costs nothing). `replicas`: the same pods' roles and indexes."""
    where = {r.pod: (r.role, r.index) for r in replicas}
    read = Reader("pods")
    out = []
    for i, raw in enumerate(pods):
        at = f"items[{i}]"
        pod = read.obj(raw, at)
        meta = read.obj(pod.get("metadata"), f"{at}.metadata")
        name = str(read.text(meta.get("name"), f"{at}.metadata.name") or "")
        status = read.obj(pod.get("status"), f"{at}.status")
        scheduled = _scheduled(read, status, at)
        if name not in where or scheduled is None:
            continue
        spec = read.obj(pod.get("spec"), f"{at}.spec")
        cpu, memory, gpu = _requests(read, spec, at)
        ended = _ended(read, status, at)
        role, index = where[name]
        out.append(
            PodLife(
                role=role,
                index=index,
                scheduled=scheduled,
                pod=name,
                uid=str(read.text(meta.get("uid"), f"{at}.metadata.uid") or name),
                seen=now if ended is None else ended,  # an ended pod reads the same each time
                ended=ended,
                end=podtimes.TERMINATED if ended is not None else None,
                cpu=cpu,
                memory_gib=memory,
                gpu=gpu,
                running=_running(read, status, at),
                hang_timeout=_hang_timeout(read, spec, at),
            )
        )
    return tuple(sorted(out))


def _running(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """When every container of the pod had started: per container its earliest start the API
    still shows (the current run's, or the previous run's where it restarted in place; the
    kubelet keeps only the last), the latest of those. None while one has not started."""
    from trainstack.deploy.recovery import parse_time

    firsts = []
    listed = read.items(status.get("containerStatuses"), f"{at}.status.containerStatuses")
    for j, raw in enumerate(listed):
        here = f"{at}.status.containerStatuses[{j}]"
        container = read.obj(raw, here)
        starts = []
        for key, states in (("state", ("running", "terminated")), ("lastState", ("terminated",))):
            held = read.obj(container.get(key), f"{here}.{key}")
            for name in states:
                one = read.obj(held.get(name), f"{here}.{key}.{name}")
                since = parse_time(read.text(one.get("startedAt"), f"{here}.{key}.{name}"))
                if since is not None:
                    starts.append(since)
        if not starts:
            return None
        firsts.append(min(starts))
    return max(firsts, default=None)


def _hang_timeout(read: Reader, spec: Mapping[str, Any], at: str) -> float:
    """The hang timeout the pod's launcher was given (trainstack.contract.shell writes it into
    the container's command), 0 where it has none."""
    from trainstack.contract.shell import HANG_TIMEOUT_OPTION

    prefix = HANG_TIMEOUT_OPTION + "="
    for j, c in enumerate(read.items(spec.get("containers"), f"{at}.spec.containers")):
        container = read.obj(c, f"{at}.spec.containers[{j}]")
        for key in ("command", "args"):
            for arg in read.items(container.get(key), f"{at}.spec.containers[{j}].{key}"):
                if isinstance(arg, str) and arg.startswith(prefix):
                    try:
                        return max(0.0, float(arg[len(prefix) :]))
                    except ValueError:
                        continue
    return 0.0


def _scheduled(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """When the scheduler bound the pod (its PodScheduled condition turning True)."""
    from trainstack.deploy.recovery import parse_time

    for j, c in enumerate(read.items(status.get("conditions"), f"{at}.status.conditions")):
        cond = read.obj(c, f"{at}.status.conditions[{j}]")
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            since = read.text(
                cond.get("lastTransitionTime"), f"{at}.status.conditions[{j}].lastTransitionTime"
            )
            return parse_time(since)
    return None


def _ended(read: Reader, status: Mapping[str, Any], at: str) -> float | None:
    """A finished pod's end: the last of its containers' `finishedAt`."""
    from trainstack.deploy.recovery import parse_time

    if status.get("phase") not in _ENDED:
        return None
    ends = []
    listed = read.items(status.get("containerStatuses"), f"{at}.status.containerStatuses")
    for j, s in enumerate(listed):
        here = f"{at}.status.containerStatuses[{j}].state"
        state = read.obj(read.obj(s, here).get("state"), here)
        done = read.obj(state.get("terminated"), f"{here}.terminated")
        end = parse_time(read.text(done.get("finishedAt"), f"{here}.terminated.finishedAt"))
        if end is not None:
            ends.append(end)
    return max(ends, default=None)


def _requests(read: Reader, spec: Mapping[str, Any], at: str) -> tuple[float, float, float]:
    """(vCPUs, GiB, GPUs) its containers request, summed (as the scheduler sums them)."""
    from trainstack.platformnames import GPU_RESOURCE
    from trainstack.spec.values import quantity

    total = [0.0, 0.0, 0.0]
    for j, c in enumerate(read.items(spec.get("containers"), f"{at}.spec.containers")):
        here = f"{at}.spec.containers[{j}].resources"
        res = read.obj(read.obj(c, f"{at}.spec.containers[{j}]").get("resources"), here)
        asked = read.obj(res.get("requests"), f"{here}.requests")
        for slot, (key, scale) in enumerate((("cpu", 1.0), ("memory", _GIB), (GPU_RESOURCE, 1.0))):
            value = asked.get(key)
            if value is None:
                continue
            try:
                total[slot] += quantity(value).value / scale
            except ValueError as err:
                raise read.error(f"{here}.requests.{key}", str(err)) from None
    return total[0], total[1], total[2]
