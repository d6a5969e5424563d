"""The process that holds a local job's namespaces (trainstack.local.podns.JobNamespaces): run by
`unshare` in a network and mount namespace of the job's own, standard library only.

It gives the network namespace a bridge, and the mount namespace the file system a pod sees:
this machine's root, every entry bound at its own place, plus the run directory at /ml and the
job's hosts and resolver files at /etc/hosts and /etc/resolv.conf; the replicas' namespaces
start from these. Then it prints `ready` and serves the runner's requests, a line each, until
its stdin closes (the runner's end, however it ends): `uplink TAP` makes the user-mode network
stack's device (trainstack.local.podns.Uplink) a port of the bridge.

A new root is built because /ml does not exist on this machine and must not be created there:
a tmpfs on a scratch directory gets a mount point per entry of /, and becomes the root by
pivot_root(2). The mounts are made here, through libc, since one `mount` process per entry
would cost more than the rest of the set-up.
"""

import ctypes
import os
import subprocess
import sys

MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
OLD_ROOT = ".old-root"

_libc = ctypes.CDLL(None, use_errno=True)


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    if _libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _bind(source: str, target: str) -> None:
    """`target` made (as `source` is: a directory, a file or a link) and `source` bound on it."""
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
    elif os.path.isdir(source):
        os.mkdir(target)
        _mount(source, target, None, MS_BIND | MS_REC, None)
    else:
        open(target, "w").close()
        _mount(source, target, None, MS_BIND | MS_REC, None)


def build_root(scratch: str, run_dir: str, hosts: str, resolv: str, pivot_root: str) -> None:
    _mount("trainstack-pod", scratch, "tmpfs", 0, "mode=755")
    for name in os.listdir("/"):
        _bind("/" + name, os.path.join(scratch, name))
    _bind(run_dir, os.path.join(scratch, "ml"))
    _mount(hosts, os.path.join(scratch, "etc", "hosts"), None, MS_BIND, None)
    os.mkdir(os.path.join(scratch, OLD_ROOT))
    subprocess.run([pivot_root, scratch, os.path.join(scratch, OLD_ROOT)], check=True)
    os.chdir("/")
    if _libc.umount2(("/" + OLD_ROOT).encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount /{OLD_ROOT}: {os.strerror(err)}")
    os.rmdir("/" + OLD_ROOT)
    # After the pivot: a mount follows a link (systemd-resolved makes /etc/resolv.conf one to
    # /run), which must be followed in the new root. What it names must exist: nothing may be
    # created in this machine's /etc to make it.
    if os.path.exists("/etc/resolv.conf"):
        _mount(resolv, "/etc/resolv.conf", None, MS_BIND, None)


def add_bridge(ip: str, bridge: str, gateway: str) -> None:
    script = (
        f"link add {bridge} type bridge\naddr add {gateway} dev {bridge}\n"
        f"link set {bridge} up\nlink set lo up\n"
    )
    subprocess.run([ip, "-b", "-"], input=script.encode(), check=True)


def add_uplink(ip: str, bridge: str, tap: str) -> None:
    """`tap` a port of the bridge. Frames for an address the bridge has not learnt are not
    flooded to it: the user-mode stack would answer a TCP segment of a connection between two
    pods (one idle past the bridge's ageing time) with a reset."""
    script = (
        f"link set {tap} master {bridge}\nlink set {tap} up\n"
        f"link set dev {tap} type bridge_slave flood off\n"
    )
    subprocess.run([ip, "-b", "-"], input=script.encode(), check=True, capture_output=True)


def serve(ip: str, bridge: str) -> None:
    for line in sys.stdin.buffer:  # until the runner closes the pipe, or dies
        verb, _, arg = line.decode().strip().partition(" ")
        if verb != "uplink":
            print(f"error unknown request {verb!r}", flush=True)
            continue
        try:
            add_uplink(ip, bridge, arg)
        except subprocess.CalledProcessError as err:
            said = err.stderr.decode(errors="replace").strip()
            print(f"error {said or err}".replace("\n", " "), flush=True)
        else:
            print("ok", flush=True)


def main(argv: list[str]) -> int:
    ip, pivot_root, bridge, gateway, run_dir, hosts, resolv, scratch = argv
    try:
        add_bridge(ip, bridge, gateway)
        build_root(scratch, run_dir, hosts, resolv, pivot_root)
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"pod holder: {err}", file=sys.stderr, flush=True)
        return 1
    print("ready", flush=True)
    serve(ip, bridge)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
