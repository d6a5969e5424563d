"""Each replica of a local run a host of its own, as a pod is: Linux namespaces, no container
runtime and no image (the replica runs this machine's programs, as in process mode).

The job gets a network namespace of its own holding a bridge, and a mount namespace whose root
is this machine's with the run directory at /ml and the job's names in /etc/hosts
(`JobNamespaces`, held by trainstack.local.podholder): nothing is added to this machine's
interfaces, routes or file system. The bridge's way out is a user-mode network stack
(slirp4netns, `Uplink`) that makes each connection a pod opens a socket of this machine's, as
a node does for its pods; it needs no root. Each replica then gets, around its argv (`wrap`):
that file system, a network namespace with its own address on the bridge (a veth pair) and a
default route through the uplink, a UTS namespace whose hostname is the pod's name, and a PID
namespace whose PID 1 is the replica's command, as the launcher is a container's. Without
root, the namespaces belong to a user namespace the holder creates, in which the runner's user
is root (user_namespaces(7)); as root none is needed.

The set-up inside a replica is a fixed `sh` script whose values arrive as arguments, never as
code, run with the programs in `TOOLS`.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from trainstack.contract import Topology
from trainstack.kubedl import JobType, replica_hostname
from trainstack.local import podholder
from trainstack.local.sandbox import Layout
from trainstack.spec.model import Run

# The programs the sandbox runs, and the Debian package of each (iproute2 is the one a minimal
# Debian image may lack).
TOOLS = {
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "setpriv": "util-linux",
    "pivot_root": "util-linux",
    "hostname": "hostname",
    "mount": "mount",
    "ip": "iproute2",
    "slirp4netns": "slirp4netns",
}
# A private range, only ever configured inside the job's own network namespace: it cannot clash
# with this machine's networks, which the namespace never sees. Its first /24 is the job's own:
# the bridge takes .1; the uplink, given the whole range (slirp4netns --cidr), answers as the
# gateway at .2 and the DNS server at .3 (slirp4netns(1), --cidr). Replicas take 10.244.1.1 on,
# in start order.
SUBNET = ipaddress.ip_network("10.244.0.0/16")
_FIRST_POD = 257
BRIDGE = "br0"
UPLINK = "tap0"
UPLINK_GATEWAY = str(SUBNET.network_address + 2)
UPLINK_DNS = str(SUBNET.network_address + 3)
# The interface a pod's network namespace has (as a CNI names it).
POD_INTERFACE = "eth0"
# The cluster's DNS domain: `<svc>.<namespace>.svc` + this is a Service's full name.
CLUSTER_DOMAIN = "cluster.local"

# $1 the job's network namespace (a /proc path), $2 its bridge, $3 the replica's interface,
# $4 its address/prefix, $5 its hostname, $6 its working directory, $7-$9 where `ip`, `nsenter`
# and `hostname` are, $10 the default gateway, $11 where `mount` is and $12 the size of the
# pod's own /dev/shm in bytes ("": this machine's); the rest is the command.
# (nsenter's --wd would keep a directory of the old root: the path is looked up here instead.)
# The host end of the veth is named after this shell's pid: a name free now, where a fixed one
# may still be held by the previous attempt's end, which the kernel removes only some time after
# that namespace dies.
_REPLICA = """\
set -e
job=$1 bridge=$2 eth=$3 addr=$4 name=$5 ip=$7 nsenter=$8 hostname=$9 via=${10}
mount=${11} shm=${12}
cd "$6"
shift 12
printf 'link add %s type veth peer name vh%s netns %s\\naddr add %s dev %s\\n\\
link set %s up\\nlink set lo up\\nroute add default via %s\\n' \\
  "$eth" $$ "$job" "$addr" "$eth" "$eth" "$via" | "$ip" -b -
"$nsenter" --net="$job" "$ip" link set "vh$$" master "$bridge" up
"$hostname" "$name"
if [ -n "$shm" ]; then
  "$mount" -t tmpfs -o "size=$shm,mode=1777,nosuid,nodev" shm /dev/shm
fi
exec "$@"
"""


def rootless() -> bool:
    return os.geteuid() != 0


def _where(tool: str) -> str | None:
    # Not only PATH: a user's PATH often lacks the sbin directories that hold `ip` and
    # `pivot_root`, which need no privileges of their own here.
    path = os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/sbin"))
    return shutil.which(tool, path=path)


def tool(name: str) -> str:
    """The absolute path of one of `TOOLS` (`probe` has checked that it is there)."""
    found = _where(name)
    if found is None:
        raise OSError(f"{name} not found (Debian package: {TOOLS[name]})")
    return found


def missing_tools() -> list[str]:
    return [name for name in TOOLS if _where(name) is None]


def _userns() -> list[str]:
    """Without root the namespaces need a user namespace to belong to; as root, one would only
    take away access to files of users it does not map."""
    return ["--user", "--map-root-user"] if rootless() else []


def _as_yourself() -> list[str]:
    """Without root, the pod's processes run as the user who started the run, not as the root
    of the job's user namespace: a user namespace of their own maps that user back (a process
    that creates one keeps its parent-death signal, so the order of set-up stays as it is)."""
    if not rootless():
        return []
    return ["--user", f"--map-user={os.getuid()}", f"--map-group={os.getgid()}"]


def probe() -> str | None:
    """Why this machine cannot give replicas namespaces of their own (None: it can): every
    kind a replica gets, created once by the tools that will create them."""
    missing = missing_tools()
    if missing:
        packages = sorted({TOOLS[tool] for tool in missing})
        return f"{', '.join(missing)} not found (Debian packages: {', '.join(packages)})"
    argv = [tool("unshare"), *_userns(), "--net", "--uts", "--mount", "--pid", "--fork"]
    done = subprocess.run(
        [*argv, "--mount-proc", "--", "true"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return f"the kernel refused new namespaces ({said[-1] if said else done.returncode})"
    return None


def pod_address(ordinal: int) -> str:
    """The address of the replica that starts `ordinal`-th (from 0)."""
    return str(SUBNET.network_address + _FIRST_POD + ordinal)


def gateway() -> str:
    return f"{SUBNET.network_address + 1}/{SUBNET.prefixlen}"


def pod_names(run: Run, topology: Topology, role: str, index: int) -> tuple[str, ...]:
    """Every name a replica answers to in the cluster's DNS: its Service as the topology names
    it (`<svc>.<namespace>.svc`), the shorter forms a pod's DNS search list resolves, the fully
    qualified one, and its hostname."""
    service_fqdn = topology.host(role, index)
    service = service_fqdn.split(".", 1)[0]
    hostname = replica_hostname(run.job_type is JobType.CUSTOM, topology.job_name, role, index)
    names = (
        service,
        f"{service}.{topology.namespace}",
        service_fqdn,
        f"{service_fqdn}.{CLUSTER_DOMAIN}",
        hostname,
    )
    return tuple(dict.fromkeys(names))


def hosts_file(run: Run, topology: Topology, keys: Sequence[tuple[str, int]]) -> str:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for ordinal, (role, index) in enumerate(keys):
        lines.append(f"{pod_address(ordinal)}\t{' '.join(pod_names(run, topology, role, index))}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PodAddresses:
    """The address plan of the namespaces mode (trainstack.local.ports.AddressPlan): the
    cluster's names and the kind's own port for every replica."""

    def topology(self, run: Run, keys: list[tuple[str, int]]) -> Topology:
        return Topology.pods(run)


def resolv_conf(namespace: str) -> str:
    """A pod's /etc/resolv.conf as the kubelet writes it for the ClusterFirst DNS policy: the
    namespace's search list and `ndots:5`, the uplink's DNS server standing in for the
    cluster's (the job's own names are in /etc/hosts, which is read first)."""
    search = (f"{namespace}.svc.{CLUSTER_DOMAIN}", f"svc.{CLUSTER_DOMAIN}", CLUSTER_DOMAIN)
    return f"search {' '.join(search)}\nnameserver {UPLINK_DNS}\noptions ndots:5\n"


class Uplink:
    """The job network's way out: slirp4netns on this machine's network, its device in the
    job's namespace made a port of the bridge. It lives until `close()` or the runner's end:
    it exits when the pipe whose write end only the runner holds is closed (--exit-fd)."""

    def __init__(self, holder_pid: int) -> None:
        ready_r, ready_w = os.pipe()
        exit_r, self._exit_w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [
                    tool("slirp4netns"),
                    f"--cidr={SUBNET}",
                    # A pod reaches its node by the node's address, not as 127.0.0.1.
                    "--disable-host-loopback",
                    f"--ready-fd={ready_w}",
                    f"--exit-fd={exit_r}",
                    str(holder_pid),
                    UPLINK,
                ],
                pass_fds=(ready_w, exit_r),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            os.close(ready_w)
            os.close(exit_r)
        with os.fdopen(ready_r, "rb") as ready:
            said = ready.read(1)  # "1" once the device exists; nothing if it exits first
        if said != b"1":
            self.close()
            raise OSError(f"slirp4netns could not give the job a way out: {self._said()}")

    def _said(self) -> str:
        assert self._proc.stderr is not None
        lines = self._proc.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self._proc.returncode}"

    def close(self) -> None:
        if self._exit_w >= 0:
            os.close(self._exit_w)
            self._exit_w = -1
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stderr is not None:
            self._proc.stderr.close()


class JobNamespaces:
    """The job's network namespace with its bridge and uplink, and its mount namespace with the
    pod's file system (/ml, /etc/hosts, /etc/resolv.conf: trainstack.local.podholder), held by a
    process that lives until `close()` or the runner's end (its stdin is a pipe from the
    runner). The hosts and resolver files are bound as they are: the runner writes them once
    the job's names are planned."""

    def __init__(self, layout: Layout) -> None:
        for directory in (layout.root, layout.pod_root):
            directory.mkdir(parents=True, exist_ok=True)
        for bound in (layout.hosts, layout.resolv):
            bound.touch()
        holder = [sys.executable, "-S", str(Path(podholder.__file__))]
        self._uplink: Uplink | None = None
        self._holder = subprocess.Popen(
            [
                tool("unshare"),
                *_userns(),
                "--net",
                "--mount",
                "--",
                *holder,
                tool("ip"),
                tool("pivot_root"),
                BRIDGE,
                gateway(),
                str(layout.root),
                str(layout.hosts),
                str(layout.resolv),
                str(layout.pod_root),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Not in the terminal's process group: Ctrl-C is the runner's to act on.
            start_new_session=True,
        )
        if self._answer() != "ready":
            self._fail("could not create the job's namespaces")
        try:
            self._uplink = Uplink(self.pid)
        except OSError as err:
            self.close()
            raise OSError(f"could not give the job's network a way out: {err}") from None
        assert self._holder.stdin is not None
        self._holder.stdin.write(f"uplink {UPLINK}\n".encode())
        self._holder.stdin.flush()
        answer = self._answer()
        if answer != "ok":
            self._fail(f"could not give the job's network a way out: {answer}")

    def _answer(self) -> str:
        assert self._holder.stdout is not None
        return self._holder.stdout.readline().decode(errors="replace").strip()

    def _fail(self, what: str) -> None:
        assert self._holder.stderr is not None
        self._end_holder()
        said = self._holder.stderr.read().decode(errors="replace").strip()
        self.close()
        raise OSError(f"{what}: {said}" if said else what)

    @property
    def pid(self) -> int:
        return self._holder.pid

    def wrap(
        self,
        argv: Sequence[str],
        ordinal: int,
        hostname: str,
        cwd: PurePath,
        shm_bytes: int | None = None,
    ) -> tuple[str, ...]:
        """`argv` run as a pod's container: the job's file system, its own network, hostname
        and PID namespace, and a /dev/shm of its own of `shm_bytes` (None: this machine's), a
        tmpfs as the container runtime gives a pod: a page beyond it is a SIGBUS, and what the
        pod left there goes with it. PID 1's parent (unshare, which waits for it and exits with its
        status) is what the supervisor starts; it sends PID 1 SIGTERM if the runner dies (the
        kernel's SIGKILL to it, through setpriv), and PID 1's end ends every process of the
        pod."""
        user = ["--user", "--preserve-credentials"] if rootless() else []
        enter = [tool("nsenter"), f"--target={self.pid}", *user, "--mount", "--"]
        pid1 = [
            tool("setpriv"),
            "--pdeathsig",
            "KILL",
            "--",
            tool("unshare"),
            *_as_yourself(),
            "--pid",
            "--fork",
            "--mount-proc",
            "--kill-child=SIGTERM",
            "--",
        ]
        address = f"{pod_address(ordinal)}/{SUBNET.prefixlen}"
        return (
            *enter,
            tool("unshare"),
            "--net",
            "--uts",
            "--mount",
            "--",
            "sh",
            "-c",
            _REPLICA,
            "sh",
            f"/proc/{self.pid}/ns/net",
            BRIDGE,
            POD_INTERFACE,
            address,
            hostname,
            str(cwd),
            tool("ip"),
            tool("nsenter"),
            tool("hostname"),
            UPLINK_GATEWAY,
            tool("mount"),
            "" if shm_bytes is None else str(shm_bytes),
            *pid1,
            *argv,
        )

    def _end_holder(self) -> None:
        holder = self._holder
        if holder.stdin is not None and not holder.stdin.closed:
            holder.stdin.close()
        try:
            holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()

    def close(self) -> None:
        if self._uplink is not None:
            self._uplink.close()
            self._uplink = None
        self._end_holder()
        for stream in (self._holder.stdout, self._holder.stderr):
            if stream is not None:
                stream.close()
