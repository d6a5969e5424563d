"""Free loopback ports for a local job's rendezvous addresses."""

from __future__ import annotations

import socket
from contextlib import ExitStack


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
