"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
commands on fd 3, answers on fd 4, NUL-terminated JSON): no websocket, no browser download,
no fixed sleeps (every wait is for a message, under one deadline)."""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

__all__ = ["Chromium", "chromium_path"]


def chromium_path() -> str | None:
    """Debian's ``chromium`` (or Google's ``chromium-browser`` / ``google-chrome``), if any."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))
                 if p), None)


class Chromium:
    """``with Chromium() as browser: page = browser.open(url)``; ``page`` holds the console
    errors and exceptions seen while loading, and answers ``evaluate`` and ``screenshot``."""

    def __init__(self, timeout: float = 60.0, width: int = 1280, height: int = 1600):
        self.deadline = time.monotonic() + timeout
        self.size = (width, height)
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict] = []

    def __enter__(self):
        self._profile = tempfile.TemporaryDirectory(prefix="polytrav-chromium-")
        self._log = open(os.path.join(self._profile.name, "stderr.txt"), "wb")
        cmd_read, self._cmd = os.pipe()
        self._resp, resp_write = os.pipe()

        args = [chromium_path(), "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--no-first-run", "--disable-extensions",
                "--hide-scrollbars", "--disable-background-networking",
                f"--user-data-dir={self._profile.name}", "about:blank"]
        # the protocol's fixed descriptors 3 and 4, set by the shell that execs the browser
        # (bash: dash redirects only descriptors 0-9)
        shell = f'exec "$0" "$@" 3<&{cmd_read} 4>&{resp_write}'
        self.process = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", shell, *args], pass_fds=(cmd_read, resp_write),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log)
        os.close(cmd_read)
        os.close(resp_write)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._send("Browser.close")
            self.process.wait(timeout=max(self.deadline - time.monotonic(), 5))
        except (OSError, RuntimeError, TimeoutError, subprocess.TimeoutExpired):  # gone or stuck
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self._cmd)
            os.close(self._resp)
            self._log.close()
            self._profile.cleanup()

    def stderr(self) -> str:
        """What the browser wrote on stderr so far."""
        self._log.flush()
        with open(self._log.name, errors="replace") as f:
            return f.read()

    # ------------------------------------------------------------ the protocol
    def _send(self, method: str, session: str | None = None, **params) -> int:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        try:
            os.write(self._cmd, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise RuntimeError(f"chromium exited (code {self.process.wait()}): "
                               f"{self.stderr()[-2000:]}") from None
        return self._next_id

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._resp], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._resp, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (code {self.process.wait()}): "
                                   f"{self.stderr()[-2000:]}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        """Send a command and return its result (events met meanwhile are kept)."""
        wanted = self._send(method, session, **params)
        while True:
            message = self._read()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._events.append(message)

    def wait_for(self, method: str, session: str) -> dict:
        """The next event ``method`` of the session (kept events first)."""
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._read())

    def open(self, url: str) -> Page:
        """Load ``url`` in a new tab and wait for its load event."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session)
        width, height = self.size
        self.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)


class Page:
    """A loaded tab: ``errors()``, ``evaluate(js)``, ``screenshot(path)``."""

    def __init__(self, browser: Chromium, session: str):
        self.browser, self.session = browser, session

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads logged by the page so far."""
        self.evaluate("0")  # a round trip: events sent before it have arrived
        out = []
        for e in self.browser._events:
            if e.get("sessionId") != self.session:
                continue
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "exception"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error",
                                                                                  "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def evaluate(self, expression: str):
        """The JSON value of a JavaScript expression in the page."""
        result = self.browser.call("Runtime.evaluate", self.session, expression=expression,
                                   returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, path) -> None:
        """Save the viewport as a PNG file."""
        data = self.browser.call("Page.captureScreenshot", self.session, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
