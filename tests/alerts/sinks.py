"""Real receivers for the alert tests: an HTTP server (on 127.0.0.1, or another loopback address if
asked) and an SMTP server on 127.0.0.1. No mocked transport."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str, timeout: float) -> bool:
    """Whether `url` answers 200 within `timeout` seconds: a server this test started is up."""
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # A worker loads Django on its first request: slow on a busy machine.
            if requests.get(url, timeout=10).status_code == 200:
                return True
        except requests.RequestException:
            time.sleep(0.2)
    return False


@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: bytes
    at: float = 0.0  # time.monotonic() when the request arrived

    def json(self):
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"ok"
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


class HttpSink:
    """Answers each request with the next scripted Reply (then 200 ok), and records every request."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.requests: list[Received] = []
        self.script: list[Reply] = []
        self.lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self):
                arrived = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with sink.lock:
                    sink.requests.append(Received(self.command, self.path, dict(self.headers), body, arrived))
                    reply = sink.script.pop(0) if sink.script else Reply()
                if reply.delay:
                    time.sleep(reply.delay)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = _handle

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def reply(self, *replies: Reply) -> None:
        with self.lock:
            self.script.extend(replies)

    def received(self, path: str | None = None) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if path is None or r.path == path]

    def wait_for(self, count: int, path: str | None = None, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.received(path)
            if len(got) >= count:
                return got
            time.sleep(0.05)
        return self.received(path)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class _MailHandler:
    def __init__(self, sink: SmtpSink):
        self.sink = sink

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.split("@")[0] in self.sink.refuse:
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.sink.messages.append(envelope)
        return "250 Message accepted for delivery"


class SmtpSink:
    """An aiosmtpd server on a free port; refuse holds local parts answered 550."""

    def __init__(self):
        self.messages = []
        self.refuse: set[str] = set()
        self.port = free_port()
        self.controller = Controller(_MailHandler(self), hostname="127.0.0.1", port=self.port)

    def __enter__(self):
        self.controller.start()
        return self

    def __exit__(self, *exc):
        self.controller.stop()
