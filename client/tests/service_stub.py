"""A small run-report service on 127.0.0.1 that answers like the spec
(201 new, 200 identical repeat, 409 changed body, 401 unknown token), for
tests of the poster, the CLI and the Scrapy end-to-end crawl."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Verdict = Callable[[dict[str, Any]], str]


def spec_like_verdict(report: dict[str, Any]) -> str:
    """A deliberately small subset of verdicts.md, enough to answer sensibly."""
    if report.get("paused"):
        return "paused"
    if report.get("crawler_verdict") == "incomplete" or report.get("exit_code") not in (0, None):
        return "incomplete"  # crawler_reported
    if (report.get("records_lost") or 0) > 0:
        return "incomplete"
    declared = report.get("declared_total")
    removed = report.get("removed", 0)
    if declared is not None and declared - removed > 0 and report["collected"] / (declared - removed) < 0.99:
        return "incomplete"
    if (report.get("pages") or {}).get("lost", 0) > 0 or report.get("failed_batches"):
        return "incomplete"
    events = (report.get("failure_window") or {}).get("events") or []
    if events and events[-1]["kind"] == "stopped":
        return "incomplete"
    return "complete"


class RecordingService:
    def __init__(self, token: str = "test-token", verdict: Verdict = spec_like_verdict) -> None:
        self.token = token
        self.verdict = verdict
        self.posts: list[dict[str, Any]] = []  # every request: headers, status, body
        self.stored: dict[tuple[str, str], bytes] = {}
        # Statuses to answer before judging, one per request (e.g. [503, 503]).
        self.scripted: list[tuple[int, dict[str, Any] | None, dict[str, str]]] = []
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, payload, headers = service.answer(self.path, dict(self.headers), body)
                data = json.dumps(payload).encode() if payload is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RecordingService:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def reports(self) -> list[dict[str, Any]]:
        return [json.loads(p["body"]) for p in self.posts if p["status"] in (200, 201)]

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            status, payload, extra = self._judge(path, headers, body)
            self.posts.append({"path": path, "headers": headers, "body": body, "status": status})
            return status, payload, extra

    def _judge(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, dict[str, str]]:
        if path != "/api/v1/runs":
            return 404, {"detail": "not found"}, {}
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"detail": "unknown token"}, {}
        if self.scripted:
            return self.scripted.pop(0)
        try:
            report = json.loads(body)
        except ValueError:
            return 422, {"errors": [{"path": "", "message": "not JSON"}]}, {}
        key = (report.get("source"), report.get("run_id"))
        if key in self.stored:
            if self.stored[key] != body:
                return 409, {"detail": "run_id already used with a different body"}, {}
            status = 200
        else:
            self.stored[key] = body
            status = 201
        verdict = self.verdict(report)
        claimed_success = report.get("exit_code") in (0, None) and report.get("crawler_verdict") != "incomplete"
        findings = (
            []
            if verdict != "incomplete"
            else [
                {
                    "rule": "stub",
                    "mode": "enforce",
                    "message": "the test service judged it incomplete",
                    "expected": report.get("declared_total"),
                    "actual": report.get("collected"),
                }
            ]
        )
        return (
            status,
            {
                "run": f"run-{len(self.stored)}",
                "source": report.get("source"),
                "verdict": verdict,
                "silent": verdict == "incomplete" and claimed_success,
                "exit_code": 3 if verdict == "incomplete" else 0,
                "findings": findings,
            },
            {},
        )
