"""The few DevTools protocol calls the runner needs, over the browser's DevTools pipe.

Chromium started with `--remote-debugging-pipe` reads commands from its file descriptor 3
and writes answers and events to its descriptor 4, each message JSON ended by a NUL byte.
The pipe's ends are this process's alone: no port, no file, nothing another local user can
reach (a DevTools port on 127.0.0.1 let any local user drive a root-run browser).

A page is a target attached in flat mode: its commands carry the session id. `evaluate`
awaits the page's promise and returns its value as JSON; an exception in the page becomes
a BrowserError with the page's message, and so does a browser that ends or a page that
crashes while a call waits: one line, never the transport's traceback.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import time
from collections.abc import Callable
from typing import Any

from gpuoverhead.errors import UserError

#: Events that say a page will answer no more (its renderer crashed or was killed).
CRASHED = ("Inspector.targetCrashed", "Target.detachedFromTarget")
_CHUNK = 1 << 20
#: A call's method, its limit in seconds and its deadline (time.monotonic()).
Waiting = tuple[str, float, float]


class BrowserError(UserError):
    """The browser or the page failed: no WebGPU, a page that throws, a browser gone."""


class Connection:
    """Commands written to the browser's end `to_browser`, messages read from `from_browser`
    (both ours: the parent closed the browser's ends). `ended` says in a few words why the
    browser's side closed (its exit code, its last line)."""

    def __init__(self, to_browser: int, from_browser: int, timeout_s: float,
                 ended: Callable[[], str]) -> None:
        self.to_browser, self.from_browser = to_browser, from_browser
        for fd in (to_browser, from_browser):
            os.set_blocking(fd, False)  # a browser that stops reading must not hang a write
        self.readable, self.writable = selectors.DefaultSelector(), selectors.DefaultSelector()
        self.readable.register(from_browser, selectors.EVENT_READ)
        self.writable.register(to_browser, selectors.EVENT_WRITE)
        self.buffer = bytearray()
        self.ids = itertools.count(1)
        self.timeout_s, self.ended = timeout_s, ended

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout_s: float | None = None) -> dict[str, Any]:
        """Send one command and return its result (other events in between are dropped)."""
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        limit = self.timeout_s if timeout_s is None else timeout_s
        waiting = (method, limit, time.monotonic() + limit)
        self._send(json.dumps(message).encode() + b"\0", waiting)
        while True:
            reply = self._receive(waiting)
            if reply.get("id") == number:
                result, error = reply.get("result", {}), reply.get("error")
                if error is not None or not isinstance(result, dict):
                    said = error.get("message", error) if isinstance(error, dict) else reply
                    raise BrowserError(f"{method}: {str(said)[:200]}")
                return result
            if session and reply.get("method") in CRASHED and session in (
                    reply.get("sessionId"), reply.get("params", {}).get("sessionId")):
                raise BrowserError(f"the browser's page ended during {method} "
                                   f"({reply['method']})")

    def _send(self, data: bytes, waiting: Waiting) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.writable, waiting)
            try:
                view = view[os.write(self.to_browser, view):]
            except BlockingIOError:
                continue
            except OSError:  # EPIPE: nobody reads the other end any more
                raise self._gone(waiting[0]) from None

    def _receive(self, waiting: Waiting) -> dict[str, Any]:
        """The next whole message."""
        while (end := self.buffer.find(b"\0")) < 0:
            self._wait(self.readable, waiting)
            try:
                chunk = os.read(self.from_browser, _CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                raise self._gone(waiting[0])
            self.buffer += chunk
        message = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        try:
            found = json.loads(message)
        except (ValueError, RecursionError):
            found = None
        if not isinstance(found, dict):  # --browser a program that is no Chromium
            raise BrowserError(f"the browser answered {waiting[0]} with other than a "
                               f"DevTools message: {message[:80]!r}")
        return found

    @staticmethod
    def _wait(selector: selectors.BaseSelector, waiting: Waiting) -> None:
        method, limit, deadline = waiting
        left = deadline - time.monotonic()
        if left <= 0 or not selector.select(left):
            raise BrowserError(f"the browser did not answer {method} within {limit:g} s")

    def _gone(self, method: str) -> BrowserError:
        return BrowserError(f"the browser ended during {method}: {self.ended()}")

    def close(self) -> None:
        for selector in (self.readable, self.writable):
            selector.close()
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)


class Page:
    """A tab of the browser, attached to `connection`."""

    def __init__(self, connection: Connection, url: str) -> None:
        self.connection = connection
        target = connection.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = connection.call("Target.attachToTarget",
                                       {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Page.navigate", {"url": url})
        self.evaluate("new Promise(r => { const f = () => self.gpuo ? r(true) : "
                      "setTimeout(f, 10); f(); })")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.connection.call(method, params, self.session)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of `expression` (a promise is awaited) in the page."""
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the page threw: {str(text).splitlines()[0]}")
        return result["result"].get("value")
