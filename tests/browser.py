"""Headless Chromium for the browser tests (from the system packages: `tools/install-chromium`).

`browse` runs it once on a page (`--dump-dom`, `--screenshot`); `DevTools` keeps one open and
drives it through its DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages
ended by NUL on file descriptors 3 and 4), standard library only: navigate, evaluate, wait for
the page to change, capture a screenshot, and collect console errors, uncaught exceptions and
failed loads (CSP refusals among them)."""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

WIDTH, HEIGHT = 1280, 4000


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "Chromium is needed for the browser tests and is not installed: "
            "`tools/install-chromium` (README's test command runs it)"
        )
    return found


def _flags(tmp: Path, width: int, height: int) -> list[str]:
    # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    return [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / 'profile'}",
        f"--window-size={width},{height}",
    ]


def browse(page: Path, *mode: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    # The virtual time budget lets the page finish loading (images decoded) before the capture.
    return subprocess.run(
        [
            *_flags(tmp, WIDTH, HEIGHT),
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            *mode,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def console_errors(stderr: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if re.search(r"CONSOLE|Uncaught|net::ERR_|Failed to load", line)
    ]


def pixels_of(shot: np.ndarray, color: np.ndarray) -> np.ndarray:
    return np.abs(shot - color).max(axis=2) < 0.1


class DevTools:
    """One headless Chromium, one tab, driven over the DevTools protocol."""

    def __init__(self, tmp: Path, width: int = WIDTH, height: int = 1600) -> None:
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()
        self._proc = subprocess.Popen(
            [*_flags(tmp, width, height), "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(to_child, 3), os.dup2(from_child, 4)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._next = 0
        self._buffer = b""
        self.errors: list[str] = []
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self._call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def close(self) -> None:
        self._proc.kill()
        self._proc.wait(timeout=30)
        os.close(self._out)
        os.close(self._in)

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._out, json.dumps(message).encode() + b"\0")

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], timeout)
            if not ready:
                return None
            data = os.read(self._in, 1 << 20)
            if not data:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += data
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        self._note(message)
        return message

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", "")[:500])

    def _call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = self._receive(deadline - time.monotonic())
            if got is not None and got.get("id") == self._next:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                result: dict[str, Any] = got.get("result", {})
                return result
        raise TimeoutError(f"{method}: no answer from Chromium")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self._call(method, self._session, **params)

    def evaluate(self, expression: str) -> Any:
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"{expression}: {got['exceptionDetails']}")
        return got["result"].get("value")

    def open(self, url: str, timeout: float = 60) -> None:
        """Load `url` and wait until it and its images have loaded."""
        self.call("Page.navigate", url=url)
        self.wait_for(
            "document.readyState === 'complete' && location.href !== 'about:blank'"
            " && [...document.images].every(i => i.complete)",
            timeout,
        )

    def wait_for(self, condition: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(f"Boolean({condition})"):
                return
            self._receive(0.1)
        raise TimeoutError(f"the page never met: {condition}")

    def screenshot(self) -> np.ndarray:
        """The viewport as an RGB array of floats in [0, 1]."""
        from matplotlib import image

        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        import io

        shot: np.ndarray = image.imread(io.BytesIO(png), format="png")[..., :3]
        return shot
