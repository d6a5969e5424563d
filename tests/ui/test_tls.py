"""`trainstack ui --tls-cert FILE --tls-key FILE`: the console over HTTPS on a real socket, with
a certificate made in the test, its token and its cookie (sent over HTTPS only); and a bad,
missing or mismatched certificate or key refused with one error before anything is served."""

from __future__ import annotations

import http.cookiejar
import os
import re
import urllib.request
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.ui.serving import client_tls, get, home_with_a_log, make_cert, serving
from trainstack.ui.server import listen

TOKEN = "a-token-of-24-characters"


def test_the_console_serves_https_and_its_pages_with_the_token(tmp_path: Path) -> None:
    home_with_a_log(tmp_path / "home", b"a line\n")
    files = make_cert(tmp_path / "tls")
    trust = client_tls(files)
    assert trust is not None
    with serving(tmp_path / "home", token=TOKEN, tls=files) as addr:
        first = get(addr, f"/?token={TOKEN}", tls=trust).decode()
        assert first.startswith("HTTP/1.1 303 ")
        cookie = re.search(r"^Set-Cookie: (.*)$", first, re.M | re.I)
        assert cookie is not None
        name = f"trainstack_ui_token_{addr[1]}"
        assert cookie.group(1).startswith(f"{name}={TOKEN};")
        assert {"Secure", "HttpOnly", "SameSite=Strict"} <= set(
            part.strip() for part in cookie.group(1).split(";")
        )
        page = get(addr, "/", tls=trust, headers=f"Cookie: {name}={TOKEN}\r\n")
        assert page.startswith(b"HTTP/1.1 200 ") and b"big-log" in page
        assert get(addr, "/", tls=trust).startswith(b"HTTP/1.1 401 ")
        # A browser, as it would: the printed link, the redirect, the cookie kept (Secure).
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=trust), urllib.request.HTTPCookieProcessor(jar)
        )
        with opener.open(f"https://127.0.0.1:{addr[1]}/?token={TOKEN}", timeout=30) as got:
            assert got.status == 200 and got.url == f"https://127.0.0.1:{addr[1]}/"
            assert "big-log" in got.read().decode()
        assert [c.secure for c in jar] == [True]
        # Plain HTTP to the TLS port: no page, the connection closed (or reset: unread).
        try:
            plain = get(addr, "/")
        except ConnectionResetError:
            plain = b""
        assert plain == b""


def test_the_printed_link_is_https(tmp_path: Path) -> None:
    listening = listen(tmp_path / "home", None, "127.0.0.1", 0, None, tls=make_cert(tmp_path))
    listening.server.close()
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+/", listening.url) and listening.tls


def test_off_loopback_with_tls_it_gives_no_plain_http_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    files = make_cert(tmp_path / "tls")
    proc = Cli(home).start(
        "ui", "--port", "0", "--host", "0.0.0.0", "--tls-cert", files.cert, "--tls-key", files.key
    )
    try:
        assert proc.stdout is not None
        lines = []
        while not lines or not lines[-1].startswith("Ctrl-C"):
            lines.append(proc.stdout.readline().strip())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert any(line.startswith("trainstack ui: serving https://0.0.0.0:") for line in lines)
    assert not any("WARNING" in line or "plain HTTP" in line for line in lines), lines


def _garbage(path: Path) -> Path:
    path.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)  # opened, it would block the console before it serves
    return path


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("cert only", "--tls-cert needs --tls-key"),
        ("key only", "--tls-key needs --tls-cert"),
        ("no cert file", "--tls-cert {cert}: no such file"),
        ("no key file", "--tls-key {key}: no such file"),
        ("cert is a folder", "--tls-cert {cert}: not a file"),
        ("key is a FIFO", "--tls-key {key}: not a file"),
        ("cert is garbage", "--tls-cert {cert}: not a PEM certificate"),
        ("key is garbage", "--tls-key {key}: not a PEM private key"),
        ("key is the cert", "--tls-key {key}: not a PEM private key"),
        ("key of another", "--tls-key {key}: not the key of the certificate {cert}"),
        ("key encrypted", "--tls-key {key}: encrypted with a passphrase"),
    ],
)
def test_a_bad_certificate_or_key_is_one_error_before_serving(
    tmp_path: Path, case: str, message: str
) -> None:
    files = make_cert(tmp_path / "tls")
    cert, key = files.cert, files.key
    args = ["--tls-cert", cert, "--tls-key", key]
    if case == "cert only":
        args = ["--tls-cert", cert]
    elif case == "key only":
        args = ["--tls-key", key]
    elif case == "no cert file":
        cert.unlink()
    elif case == "no key file":
        key.unlink()
    elif case == "cert is a folder":
        cert.unlink()
        cert.mkdir()
    elif case == "key is a FIFO":
        key.unlink()
        _fifo(key)
    elif case == "cert is garbage":
        _garbage(cert)
    elif case == "key is garbage":
        key.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    elif case == "key is the cert":
        key.write_bytes(cert.read_bytes())
    elif case == "key of another":
        key.write_bytes(make_cert(tmp_path / "other").key.read_bytes())
    elif case == "key encrypted":
        key.write_bytes(make_cert(tmp_path / "enc", passphrase=b"secret").key.read_bytes())
        cert.write_bytes((tmp_path / "enc" / "console.crt").read_bytes())
    got = Cli(tmp_path / "home", forbid_traceback=True)("ui", "--port", "0", *args, timeout=60)
    assert got.code == 2, got.output
    expected = "error: " + message.format(cert=cert, key=key)
    assert got.err.startswith(expected), got.err
    assert got.err.count("error:") == 1 and "serving" not in got.out


def test_a_large_log_arrives_whole_over_tls(tmp_path: Path) -> None:
    """Past what the socket takes at once, a TLS write is retried with the same bytes."""
    import hashlib
    import http.client

    log = b"".join(b"%08d " % i + b"x" * 90 + b"\n" for i in range(80_000))  # ~7.9 MB
    run_id = home_with_a_log(tmp_path / "home", log)
    files = make_cert(tmp_path / "tls")
    with serving(tmp_path / "home", tls=files) as addr:
        conn = http.client.HTTPSConnection(addr[0], addr[1], context=client_tls(files), timeout=60)
        try:
            conn.request("GET", f"/runs/{run_id}/logs/worker-0.log")
            got = conn.getresponse()
            body = got.read()
        finally:
            conn.close()
    assert got.status == 200 and hashlib.sha256(body).digest() == hashlib.sha256(log).digest()
