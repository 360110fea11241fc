"""Headless Chromium driven over the DevTools pipe (fds 3 and 4: no port, no websocket, no
extra package), one browser for a whole test: load a page, collect what it raised and
requested, read element positions with a script, take a screenshot at a given viewport
and media (screen or print). `.ci/run` installs Debian's chromium; `binary()` is None
where none is installed."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any


def binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Loaded:
    """What a page did while it loaded: console messages, exceptions, log entries, and
    every URL it requested."""

    problems: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


class Browser:
    """`with Browser(path) as b: b.load(page); b.evaluate(js); b.screenshot(...)`. Host
    names resolve nowhere, so a page that reaches for the network also fails loudly."""

    def __init__(self, chromium: str, timeout_s: float = 60.0) -> None:
        self.chromium = chromium
        self.timeout_s = timeout_s
        self.buffer = b""
        self.sent = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends on the fds Chromium reads and writes
            read_end = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.profile = tempfile.mkdtemp(prefix="gpusolve-chromium-")
        self.proc = subprocess.Popen(
            [
                self.chromium,
                "--headless=new",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                f"--user-data-dir={self.profile}",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=wire,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_r)
        os.close(from_w)
        self.deadline = time.monotonic() + self.timeout_s
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable", session=True)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        os.close(self.to_w)
        os.close(self.from_r)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _messages(self) -> Iterator[dict[str, Any]]:
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                yield json.loads(raw)
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            if select.select([self.from_r], [], [], left)[0]:
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> Any:
        self.sent += 1
        message: dict[str, Any] = {"id": self.sent, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_w, json.dumps(message).encode() + b"\0")
        for m in self._messages():
            if m.get("id") == self.sent:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
            self.events.append(m)
        raise AssertionError("unreachable")

    def viewport(self, width: int, height: int, media: str = "screen") -> None:
        """The page's layout viewport in CSS pixels, and the CSS media it is laid out for."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics, session=True)
        self.call("Emulation.setEmulatedMedia", {"media": media}, session=True)

    def load(self, page: Path) -> Loaded:
        self.events.clear()
        self.call("Page.navigate", {"url": page.resolve().as_uri()}, session=True)
        if not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            for m in self._messages():
                self.events.append(m)
                if m.get("method") == "Page.loadEventFired":
                    break
        seen = Loaded()
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled":
                seen.problems.append(f"console.{p['type']}: {p.get('args')}")
            elif method == "Runtime.exceptionThrown":
                seen.problems.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif method == "Log.entryAdded":
                seen.problems.append(f"{p['entry']['level']}: {p['entry']['text']}")
            elif method == "Network.requestWillBeSent":
                seen.urls.append(p["request"]["url"])
        return seen

    def evaluate(self, expression: str) -> Any:
        """A script's JSON-able value, run by DevTools (the page's own policy forbids
        scripts; DevTools' evaluation is not the page's)."""
        params = {"expression": expression, "returnByValue": True}
        result = self.call("Runtime.evaluate", params, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """The viewport as a PNG (what a reader sees without scrolling)."""
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
