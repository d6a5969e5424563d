"""What one client may hold of the console's server (waitress on 127.0.0.1, in this process),
over plain HTTP and over TLS alike: a slow or half-sent request (or TLS handshake), a download
nobody reads, a request for another host; and the link printed at start, which must survive any
token."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.ui.serving import client_tls, connect_from, get, home_with_a_log, make_cert, serving
from trainstack.ui.app import UiConfig, create_app
from trainstack.ui.server import listen
from trainstack.ui.tls import TlsFiles


@pytest.fixture(params=["http", "https"])
def tls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TlsFiles | None]:
    """None (plain HTTP), or a certificate and key made for this test (TLS)."""
    yield make_cert(tmp_path / "tls") if request.param == "https" else None


def test_clients_that_send_half_a_request_hold_neither_the_slots_nor_the_page(
    tmp_path: Path, tls: TlsFiles | None
) -> None:
    home_with_a_log(tmp_path / "home", b"a line\n")
    trust = client_tls(tls)
    with serving(tmp_path / "home", tls=tls, request_s=1.0) as addr:
        held = []
        for _ in range(120):  # past waitress' 100 connections
            try:
                sock = connect_from("127.0.0.2", addr, trust)
                sock.sendall(b"GET / HT")
                held.append(sock)
            except OSError:
                pass  # refused or closed at once: the limit per address
        try:
            page = get(addr, "/", tls=trust)
            assert page.startswith(b"HTTP/1.1 200 "), "another address is still served"
            # Each half request is given up on: its connection closed, no thread ever taken.
            for sock in held[:3]:
                with contextlib.suppress(ConnectionResetError):
                    assert sock.recv(1) == b""
        finally:
            for sock in held:
                sock.close()


def test_clients_that_never_read_a_large_log_do_not_keep_the_threads(
    tmp_path: Path, tls: TlsFiles | None
) -> None:
    run_id = home_with_a_log(tmp_path / "home", (b"x" * 1023 + b"\n") * (40 << 10))  # 40 MiB
    trust = client_tls(tls)
    with serving(tmp_path / "home", tls=tls, stall_s=1.0) as addr:
        readers = []
        for _ in range(10):  # more than the console's 8 threads
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(20)
            sock.connect(addr)
            if trust is not None:
                sock = trust.wrap_socket(sock, server_hostname=addr[0])
            request = f"GET /runs/{run_id}/logs/worker-0.log HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            sock.sendall(request.encode())
            readers.append(sock)  # and never read
        try:
            assert get(addr, "/", tls=trust).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in readers:
                sock.close()


def test_an_absolute_form_target_is_judged_by_its_own_host(tmp_path: Path) -> None:
    home_with_a_log(tmp_path / "home", b"a line\n")
    with serving(tmp_path / "home") as addr:
        other = get(addr, "http://other.example/")
        assert other.startswith(b"HTTP/1.1 403 ") and b"other.example" in other
        assert get(addr, f"http://127.0.0.1:{addr[1]}/").startswith(b"HTTP/1.1 200 ")


def test_the_printed_link_carries_any_token(tmp_path: Path) -> None:
    home_with_a_log(tmp_path / "home", b"a line\n")
    token = "a#b&c d+e%f/g?h=i-0123456789"
    listening = listen(tmp_path / "home", None, "127.0.0.1", 0, token)
    listening.server.close()
    link = urlsplit(listening.url)
    assert parse_qs(link.query) == {"token": [token]} and link.fragment == ""
    with create_app(UiConfig(home=tmp_path / "home", token=token)).test_client() as c:
        first = c.get(f"{link.path}?{link.query}", headers={"Host": "127.0.0.1:8765"})
        assert first.status_code == 303, first.get_data(as_text=True)


def test_a_client_that_sends_half_a_tls_handshake_is_closed_as_one_that_sends_half_a_request(
    tmp_path: Path,
) -> None:
    """The handshake is timed with the request: the idle limit (here longer than the client
    waits) is not what closes it."""
    home_with_a_log(tmp_path / "home", b"a line\n")
    files = make_cert(tmp_path / "tls")
    with serving(tmp_path / "home", tls=files, request_s=1.0, idle_s=600) as addr:
        with connect_from("127.0.0.3", addr) as sock:
            sock.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello's first bytes, then nothing
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1) == b""  # closed by the server, well before the 20 s timeout
        assert get(addr, "/", tls=client_tls(files)).startswith(b"HTTP/1.1 200 ")


def test_a_request_longer_than_one_read_is_served_over_tls(tmp_path: Path) -> None:
    """One TLS record carries up to 16 KB and waitress reads 8 KB at a time: the rest, already
    decrypted, never makes the socket readable again, so it is read at once."""
    home_with_a_log(tmp_path / "home", b"a line\n")
    files = make_cert(tmp_path / "tls")
    with serving(tmp_path / "home", tls=files, request_s=5.0) as addr:
        padded = get(addr, "/", tls=client_tls(files), headers=f"X-Pad: {'a' * 12000}\r\n")
        assert padded.startswith(b"HTTP/1.1 200 ")
