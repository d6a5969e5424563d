"""Where a local job's replicas listen: the address plan (`AddressPlan`), and free loopback
ports for processes mode (`SharedLoopback`).

Every replica of a local run shares this machine's network namespace, so each gets its own free
port on 127.0.0.1 where pods would each have their own address and the kind's fixed port. Code
that binds a port from `MASTER_PORT` in two replicas (KubeDL's XGBoost example: master-0 and
worker-0 are both RANK=0 and each starts a rabit tracker) fails here on the second bind
(docs/local.md). The sandbox's plan, each replica a host of its own with the cluster's names and
ports, is `trainstack.local.podns.PodAddresses`.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack
from typing import Protocol, runtime_checkable

from trainstack.contract import Topology
from trainstack.kubedl import job_kind
from trainstack.spec.model import Run


@runtime_checkable
class AddressPlan(Protocol):
    """Chooses every replica's address for a local run: `keys` are (role, index) in start
    order; the Topology gives the contract's MASTER_*/TF_CONFIG values."""

    def topology(self, run: Run, keys: list[tuple[str, int]]) -> Topology: ...


class SharedLoopback:
    """One network namespace for the whole job: 127.0.0.1 and a free port per replica (none for
    kinds without a framework port)."""

    def topology(self, run: Run, keys: list[tuple[str, int]]) -> Topology:
        if job_kind(run.job_type).port is None:
            return Topology.local(run, {})
        ports = iter(free_ports(len(keys)))
        by_role: dict[str, list[int]] = {}
        for role, _index in keys:
            by_role.setdefault(role, []).append(next(ports))
        return Topology.local(run, by_role)


def free_ports(count: int) -> tuple[int, ...]:
    """`count` distinct ports that were free a moment ago.

    All sockets are held open until every port is chosen, so the kernel cannot hand the same
    port out twice within one job.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
    return tuple(ports)
