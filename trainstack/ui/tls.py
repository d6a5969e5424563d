"""HTTPS for the console (`--tls-cert FILE --tls-key FILE`): the certificate and key checked
before anything is bound (one error each for a missing, unreadable, damaged or encrypted file
and for a key that is not the certificate's), and TLS spoken by the standard library's `ssl`
(OpenSSL) inside waitress' own connections.

waitress has no TLS of its own. A server that has (cheroot) reads each request on one of its
worker threads, so a client that sends half a request, or takes its response a byte at a time,
holds a thread; the limits of trainstack.ui.channel would have to be rebuilt inside it. Here each
accepted socket is wrapped, non-blocking, before waitress' channel takes it: the handshake and
the records are read and written in waitress' main loop, and every limit of a plain connection
holds for a TLS one, the handshake counted in the time a request has to arrive whole."""

from __future__ import annotations

import os
import ssl
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from trainstack.errors import UserError
from trainstack.ui.channel import BoundedChannel, Limits

_MAKE = "docs/ui.md shows how to make a certificate and its key"


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path


class _Encrypted(Exception):
    """The key asks for a passphrase: the console has no way to be given one."""


def _check_file(option: str, path: Path) -> None:
    """A regular file this process can read: OpenSSL would block on a FIFO, and says only
    "PEM lib" of a folder."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{option} {path}: no such file", hint=_MAKE) from None
    except OSError as err:
        raise UserError(f"{option} {path}: cannot be read ({err.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{option} {path}: not a file")
    if not os.access(path, os.R_OK):
        raise UserError(f"{option} {path}: cannot be read (permission denied)")


def context(files: TlsFiles) -> ssl.SSLContext:
    """A server context for `files`, TLS 1.2 or later; one UserError for what is wrong."""
    _check_file("--tls-cert", files.cert)
    _check_file("--tls-key", files.key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        # Parses every PEM certificate in the file: a file with none is refused here, said
        # as such, rather than as the key's problem below.
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=str(files.cert))
    except (ssl.SSLError, ValueError):
        raise UserError(
            f"--tls-cert {files.cert}: not a PEM certificate",
            hint="give the certificate (-----BEGIN CERTIFICATE-----), its chain after it",
        ) from None

    def no_passphrase() -> str:
        raise _Encrypted

    try:
        ctx.load_cert_chain(str(files.cert), str(files.key), password=no_passphrase)
    except _Encrypted:
        raise UserError(
            f"--tls-key {files.key}: encrypted with a passphrase, which the console cannot ask",
            hint=f"decrypt a copy readable by you alone: openssl pkey -in {files.key} -out KEY",
        ) from None
    except ssl.SSLError as err:
        if err.reason == "KEY_VALUES_MISMATCH":
            raise UserError(
                f"--tls-key {files.key}: not the key of the certificate {files.cert}",
                hint="give the key the certificate was made from",
            ) from None
        raise UserError(
            f"--tls-key {files.key}: not a PEM private key "
            f"({err.reason or err.strerror or 'unreadable'})",
            hint="give the private key (-----BEGIN PRIVATE KEY-----) the certificate was made from",
        ) from None
    except OSError as err:  # e.g. a file replaced between the checks and here
        raise UserError(f"--tls-cert/--tls-key: cannot be read ({err.strerror or err})") from None
    return ctx


def tls_channel(limits: Limits, ctx: ssl.SSLContext) -> type[TlsChannel]:
    """The channel class of a server speaking TLS with `ctx`, held to `limits`."""
    return type("TlsBoundedChannel", (TlsChannel,), {"limits": limits, "tls": ctx})


_AGAIN = (ssl.SSLWantReadError, ssl.SSLWantWriteError)


class TlsChannel(BoundedChannel):
    tls: ClassVar[ssl.SSLContext]

    def __init__(self, server: Any, sock: Any, addr: Any, adj: Any, map: Any = None) -> None:
        # Nothing is said on the wire yet: the handshake happens as the client's bytes arrive.
        wrapped = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        super().__init__(server, wrapped, addr, adj, map)

    @property
    def _tls(self) -> ssl.SSLSocket | None:
        sock = self.socket
        return sock if isinstance(sock, ssl.SSLSocket) else None  # None once closed

    def handle_read(self) -> None:
        # The time a request has to arrive whole starts with the handshake's first byte: a
        # client that sends half a handshake is closed as one that sends half a request.
        if self.request is None and self.began is None:
            self.began = time.monotonic()
        while self.connected and (sock := self._tls) is not None:
            try:
                data = sock.recv(self.adj.recv_bytes)
            except _AGAIN:  # the handshake or a record is not whole yet
                return
            except (ssl.SSLError, OSError):  # not TLS, a bad record, the client gone
                self.handle_close()
                return
            if not data:
                self.handle_close()
                return
            self.last_activity = time.time()
            self.received(data)
            # A record holds up to 16 KB and a read takes recv_bytes: what is decrypted and not
            # taken yet does not make the socket readable again, so it is taken now.
            if not sock.pending():
                return

    def send(self, data: bytes, do_close: bool = True) -> int:
        sock = self._tls
        if sock is None:
            return 0
        try:
            sent: int = sock.send(data)
        except _AGAIN:  # waitress sends the same bytes again when the socket is writable
            return 0
        except OSError:  # the client gone, or a bad record: the connection is over
            if do_close:
                self.handle_close()
            return 0
        return sent
