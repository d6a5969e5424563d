"""What one client may hold of the console's server, and for how long.

waitress (its documented arguments: `connection_limit` 100, `channel_timeout` 120 s, and a task
thread that waits while a response's pending output is over `outbuf_high_watermark`) lets a
client that sends half a request keep a connection slot for two minutes, a hundred such hold
every slot, and a client that never reads a large download keep a task thread for as long as it
stays connected. The console's token is checked inside the application, after all of that, so
off loopback anyone who can reach the port could do it. Each connection here is bounded instead:

- a request (its line, headers and any body) arrives whole within `request_s` of its first byte;
- a connection with nothing to do is closed after `idle_s` (waitress' `channel_timeout`);
- one address holds at most `per_peer` connections (a new one past that is closed at once);
- a response whose pending output stays over the high watermark for `stall_s` is abandoned and
  its connection closed, so a reader that stops reading frees its thread.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from waitress.channel import ClientDisconnected, HTTPChannel

_log = logging.getLogger("trainstack.ui")


@dataclass(frozen=True)
class Limits:
    request_s: float = 10.0
    idle_s: int = 30
    per_peer: int = 16
    stall_s: float = 30.0
    connections: int = 100  # waitress' default connection_limit, kept
    # A response's output held for a slow reader (waitress spills past 1 MB to a temporary file):
    # at most this much per connection before its thread waits, against waitress' 16 MB.
    buffered: int = 4 << 20
    request_bytes: int = 64 << 10  # a GET has no body worth more; waitress allows 1 GB

    def adjustments(self) -> dict[str, Any]:
        """The waitress arguments these limits set."""
        return {
            "channel_timeout": self.idle_s,
            # How often waitress looks for idle connections (its default: every 30 s).
            "cleanup_interval": 1,
            "connection_limit": self.connections,
            "outbuf_high_watermark": self.buffered,
            "max_request_header_size": self.request_bytes,
            "max_request_body_size": self.request_bytes,
        }


def bounded(limits: Limits) -> type[BoundedChannel]:
    """The channel class a server uses to hold its connections to `limits`."""
    return type("BoundedChannel", (BoundedChannel,), {"limits": limits})


class BoundedChannel(HTTPChannel):
    limits: ClassVar[Limits] = Limits()

    def __init__(self, server: Any, sock: Any, addr: Any, adj: Any, map: Any = None) -> None:
        super().__init__(server, sock, addr, adj, map)
        self.began: float | None = None  # when the request now arriving sent its first byte
        peer = _peer(addr)
        held = [c for c in (map or {}).values() if isinstance(c, BoundedChannel)]
        count = len([c for c in held if _peer(c.addr) == peer])
        if count > self.limits.per_peer:
            _log.warning(
                "trainstack ui: %s holds %d connections; closing a new one", peer, count - 1
            )
            self.handle_close()

    def received(self, data: bytes) -> bool:
        if self.request is None and data and self.began is None:  # (TLS: set at its handshake)
            self.began = time.monotonic()
        done: bool = super().received(data)
        if self.request is None:
            self.began = None
        return done

    def readable(self) -> bool:
        # The main loop asks every connection this at least once a second (asyncore_loop_timeout).
        if self.began is not None and time.monotonic() - self.began > self.limits.request_s:
            self.began = None
            self.will_close = True  # writable() is now true: the main loop closes it
            return False
        return bool(super().readable())

    def write_soon(self, data: bytes) -> int:
        self._wait_for_reader()
        written: int = super().write_soon(data)
        return written

    def _wait_for_reader(self) -> None:
        """Wait, in the task's thread, until the client has taken enough of what is pending;
        past `stall_s` the response is abandoned (the task ends as for a client that left)."""
        deadline: float | None = None
        with self.outbuf_lock:
            while self.connected and self.total_outbufs_len > self.adj.outbuf_high_watermark:
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.limits.stall_s
                if now >= deadline:
                    _log.warning(
                        "trainstack ui: %s stopped reading; response abandoned", _peer(self.addr)
                    )
                    self.will_close = True
                    self.server.pull_trigger()
                    raise ClientDisconnected
                self.server.pull_trigger()
                self.outbuf_lock.wait(deadline - now)


def _peer(addr: Any) -> str:
    return str(addr[0]) if isinstance(addr, tuple) and addr else str(addr)
