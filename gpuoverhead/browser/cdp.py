"""The few DevTools protocol calls the runner needs, over one WebSocket (`websockets`).

A page is a target attached in flat mode: its commands carry the session id. `evaluate`
awaits the page's promise and returns its value as JSON; an exception in the page becomes
a BrowserError with the page's message.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from gpuoverhead.errors import UserError


class BrowserError(UserError):
    """The browser or the page failed: no WebGPU, a page that throws, a browser gone."""


def require() -> None:
    """A BrowserError unless the protocol's transport is installed (checked before a browser
    is started for nothing)."""
    try:
        import websockets.sync.client  # noqa: F401
    except ModuleNotFoundError:
        raise BrowserError("chromium needs the websockets package "
                           "(pip install 'gpuoverhead[browser]')") from None


class Connection:
    def __init__(self, url: str, timeout_s: float) -> None:
        from websockets.sync.client import connect

        self.stack = contextlib.ExitStack()  # the context the package asks its users for
        self.socket = self.stack.enter_context(connect(url, max_size=None,
                                                       open_timeout=timeout_s))
        self.ids = itertools.count(1)
        self.timeout_s = timeout_s

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result (events in between are dropped)."""
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            try:
                reply = json.loads(self.socket.recv(timeout=self.timeout_s))
            except TimeoutError:
                raise BrowserError(f"the browser did not answer {method} within "
                                   f"{self.timeout_s:g} s") from None
            if reply.get("id") == number:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message', reply)}")
                return reply.get("result", {})

    def close(self) -> None:
        self.stack.close()


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
