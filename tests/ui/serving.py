"""The console's real server (waitress, as `trainstack ui` runs it) in this process on
127.0.0.1, over plain HTTP or TLS with a certificate made here (the `cryptography` package), and
a registry of runs made through its API, for the tests of what one client may hold of it."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainstack.registry import NewRun, Registry, ReplicaExit
from trainstack.ui.server import listen
from trainstack.ui.tls import TlsFiles


def make_cert(folder: Path, name: str = "console", passphrase: bytes | None = None) -> TlsFiles:
    """A self-signed certificate for 127.0.0.1 and localhost and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder / f"{name}.crt", folder / f"{name}.key")
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase
        else serialization.NoEncryption()
    )
    files.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    files.key.chmod(0o600)
    return files


def client_tls(files: TlsFiles | None) -> ssl.SSLContext | None:
    """A client context that trusts `files`' certificate (and checks the host's name)."""
    return None if files is None else ssl.create_default_context(cafile=str(files.cert))


def home_with_a_log(home: Path, log: bytes) -> str:
    """A registry of one local run whose replica worker-0 wrote `log`; the run's id."""
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name="big-log", component="c", component_version="1.0.0"))
        reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
    logs = home / "runs" / rec.id / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "worker-0.log").write_bytes(log)
    return rec.id


@contextmanager
def serving(
    home: Path, token: str | None = None, tls: TlsFiles | None = None, **limits: Any
) -> Iterator[tuple[str, int]]:
    """(address, port) of the console serving `home` until the block ends (over TLS with
    `tls`)."""
    from waitress import wasyncore

    from trainstack.ui.channel import Limits

    listening = listen(home, None, "127.0.0.1", 0, token, Limits(**limits), tls=tls)
    server: Any = listening.server
    loop = threading.Thread(target=server.run, daemon=True)
    loop.start()
    try:
        yield "127.0.0.1", int(server.effective_port)
    finally:
        # Closing every socket from the loop's own thread ends its loop (its map is empty).
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        loop.join(timeout=30)
        server.task_dispatcher.shutdown(timeout=5)


def get(
    addr: tuple[str, int],
    path: str = "/",
    *,
    timeout: float = 20.0,
    tls: ssl.SSLContext | None = None,
    headers: str = "",
) -> bytes:
    """The response to one GET, its first 1 MiB at most (over TLS with a `tls` context)."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{addr[1]}\r\n{headers}Connection: close\r\n\r\n"
    got = b""
    raw = socket.create_connection(addr, timeout=timeout)
    try:
        sock = tls.wrap_socket(raw, server_hostname=addr[0]) if tls else raw
    except OSError:
        raw.close()
        raise
    with sock:
        sock.sendall(head.encode())
        while len(got) < (1 << 20) and (data := sock.recv(65536)):
            got += data
    return got


def connect_from(
    source: str, addr: tuple[str, int], tls: ssl.SSLContext | None = None
) -> socket.socket:
    """A connection to `addr` from loopback address `source` (Linux routes all of 127/8 here),
    its TLS handshake done with a `tls` context."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.bind((source, 0))
    sock.connect(addr)
    if tls is None:
        return sock
    try:
        return tls.wrap_socket(sock, server_hostname=addr[0])
    except OSError:
        sock.close()
        raise
