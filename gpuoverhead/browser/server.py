"""A static HTTP server on 127.0.0.1 for the page, cross-origin isolated (COOP/COEP).

Isolation is what makes `performance.now()` step in 5 µs instead of 100 µs; the kernel's
WGSL is served from memory at kernel.wgsl, so a suite's own kernels work as shipped ones do.
Any local user can connect to a port on 127.0.0.1, so the files lie under a path of an
unguessable token made for each server (told to the browser over its DevTools pipe alone):
any other path, and any method but GET, is refused with nothing served.
"""

from __future__ import annotations

import hmac
import secrets
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PAGE = Path(__file__).parent / "page"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".wgsl": "text/plain"}


@contextmanager
def serve(kernel_source: str = "") -> Iterator[str]:
    """The page's base URL (`http://127.0.0.1:PORT/TOKEN/`) while the server runs (port
    chosen by the system). http.server is imported here: every run and every worker imports
    this module with the browser driver, and most start no browser (0.03 CPU-s each)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            """A browser that closes its connection (it was stopped) is no error to print."""
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    files = {p.name: p.read_bytes() for p in PAGE.iterdir() if p.suffix in _TYPES}
    files["kernel.wgsl"] = kernel_source.encode()
    token = secrets.token_urlsafe(24)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            parts = self.path.split("?")[0].split("/")  # exactly /TOKEN/NAME
            body = files.get(parts[2]) if len(parts) == 3 and not parts[0] and \
                hmac.compare_digest(parts[1].encode(), token.encode()) else None
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", _TYPES[Path(parts[2]).suffix])
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet: the run has its own output
            pass

    server = Server(("127.0.0.1", 0), Handler)
    # Polled every 50 ms, not the default 0.5 s: shutdown() waits for the next poll, and
    # every worker's browser closes one server.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{token}/"
    finally:
        server.shutdown()
        server.server_close()
