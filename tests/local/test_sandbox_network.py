"""A pod of the sandbox reaches out of the job as a cluster's pod does through its node: to this
machine's addresses and beyond (not to its 127.0.0.1, which is the pod's own), with the
kubelet's ClusterFirst resolver file. Real namespaces, a real slirp4netns, a real server."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import needs_namespaces, write_run
from trainstack.local import podns
from trainstack.local.sandboxmode import DEFAULT, SandboxMode, choose

# What the replica does: it greets a server on this machine, by this machine's address, tries
# the same port on its own 127.0.0.1, and records its resolver file.
CALLER = """\
import json, os, socket
host, port = os.environ["EGRESS_TARGET"].rsplit(":", 1)
seen = {}
with socket.create_connection((host, int(port)), timeout=30) as conn:
    conn.sendall(socket.gethostname().encode() + b"\\n")
    seen["reply"] = conn.makefile().readline().strip()
try:
    socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
    seen["loopback"] = "reached"
except OSError as err:
    seen["loopback"] = type(err).__name__
seen["resolv"] = open("/etc/resolv.conf").read()
with open(os.environ["PAI_OUTPUT_RESULT"] + "/seen.json", "w") as out:
    json.dump(seen, out)
"""


def _this_machines_address() -> str | None:
    """An IPv4 address of this machine other than loopback: the source of its default route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.123", 9))  # nothing is sent: a datagram socket's route
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else str(address)


ADDRESS = _this_machines_address()


class _Greeter(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        name = self.rfile.readline().strip()
        peer = self.client_address[0]
        self.wfile.write(b"hello " + name + b" from " + peer.encode() + b"\n")


@contextlib.contextmanager
def _server() -> Iterator[int]:
    with socketserver.ThreadingTCPServer(("0.0.0.0", 0), _Greeter) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.server_address[1]
        finally:
            server.shutdown()
            thread.join()


def _caller(tmp_path: Path) -> Path:
    component = tmp_path / "caller"
    (component / "src").mkdir(parents=True)
    (component / "src" / "main.py").write_text(CALLER)
    (component / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        "metadata: {name: caller, version: 1.0.0}\n"
        "spec: {jobType: custom, image: registry.example.com/x:1, code: ./src,"
        " command: python main.py, outputs: [{name: result}]}\n"
    )
    return component / "component.yaml"


@pytest.mark.slow
@needs_namespaces
@pytest.mark.skipif(ADDRESS is None, reason="this machine has no IPv4 address but loopback")
def test_a_pod_reaches_this_machine_by_its_address_but_not_its_loopback(
    tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "result"
    spec = write_run(tmp_path, _caller(tmp_path), "caller", outputs={"result": f"file://{out}/"})
    with _server() as port:
        cli.env["EGRESS_TARGET"] = f"{ADDRESS}:{port}"
        done = cli(
            "run", spec, "--local", "--no-install", "--sandbox", "namespaces",
            "--pass-env", "EGRESS_TARGET",
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads((out / "seen.json").read_text())
    # The pod's connection is one of this machine's sockets, as a node's SNAT makes it.
    assert seen["reply"] == f"hello caller-0 from {ADDRESS}"
    # This machine's 127.0.0.1 is not the pod's: nothing listens on the pod's own.
    assert seen["loopback"] == "ConnectionRefusedError"
    namespace = "default"
    assert seen["resolv"] == (
        f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
        f"nameserver {podns.UPLINK_DNS}\noptions ndots:5\n"
    )


def test_pod_addresses_leave_the_uplinks_own_free() -> None:
    """The uplink's gateway and DNS server (slirp4netns(1): .2 and .3 of --cidr) and the
    bridge's address are never a replica's."""
    taken = {podns.UPLINK_GATEWAY, podns.UPLINK_DNS, podns.gateway().split("/")[0]}
    assert len(taken) == 3
    pods = {podns.pod_address(i) for i in range(300)}
    assert not pods & taken
    assert all(ipaddress.ip_address(address) in podns.SUBNET for address in pods)


def test_the_default_is_namespaces_where_the_machine_allows_them_and_says_so() -> None:
    assert DEFAULT is SandboxMode.AUTO
    chosen = choose(None, probe=lambda: None)
    assert chosen.describe() == "namespaces (this machine allows namespaces)"
    fallen = choose(None, probe=lambda: "slirp4netns not found (Debian packages: slirp4netns)")
    assert fallen.describe() == (
        "processes (namespaces unavailable: slirp4netns not found (Debian packages: slirp4netns))"
    )
