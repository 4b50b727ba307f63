"""The HTTP plumbing every local test site shares: a threaded server on 127.0.0.1 that asks the site
for each GET's answer. A site supplies `answer(path) -> (status, body)` and, where it needs them,
extra headers (a redirect's Location, a 429's Retry-After)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LocalSite:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body = site.answer(self.path)
                headers, body = site.headers(status, body)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def answer(self, path: str) -> tuple[int, bytes]:
        raise NotImplementedError

    def headers(self, status: int, body: bytes) -> tuple[dict[str, str], bytes]:
        """Headers beyond the content's, and the body to send with them."""
        return {}, body

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
