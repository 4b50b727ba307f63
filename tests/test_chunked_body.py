"""A chunked report (Transfer-Encoding: chunked, no Content-Length) is read like any other, under the
same size limit: 201 within it, 413 beyond it.

Django's development server (and so `live_server`) cannot read a chunked body at all, so this runs
the service under gunicorn, as bin/serve does, on a database of its own in a temporary folder.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from completeness_client import ReportPoster
from tests.alerts.stack import manage as run_manage
from tests.conftest import report

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 64 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    var = tmp_path_factory.mktemp("gunicorn")
    env = {
        **os.environ,
        "VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
        "REPORT_MAX_BYTES": str(LIMIT),
        "DEBUG": "false",
    }

    def manage(*args: str) -> str:
        done = run_manage(env, *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "--no-input", "-v", "0")
    token = manage("create_token", "chunked").strip().splitlines()[-1]
    port = free_port()
    log = open(var / "gunicorn.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "completeness.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (var / "gunicorn.log").read_text()
                time.sleep(0.1)
        yield port, token
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def post(server, body: bytes, *, chunked: bool, chunk_size: int = 1000) -> tuple[int, dict, dict]:
    port, token = server
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if chunked:
        pieces = (body[i : i + chunk_size] for i in range(0, len(body), chunk_size))
        connection.request("POST", "/api/v1/runs", body=pieces, headers=headers, encode_chunked=True)
    else:
        connection.request("POST", "/api/v1/runs", body=body, headers=headers)
    response = connection.getresponse()
    answer = (response.status, dict(response.getheaders()), json.loads(response.read()))
    connection.close()
    return answer


def padded(size: int, **fields) -> bytes:
    """A valid report of exactly `size` bytes (the padding is an unknown top-level field)."""
    body = report(**fields, padding="")
    text = json.dumps(body).encode()
    return json.dumps({**body, "padding": "x" * (size - len(text))}).encode()


def test_a_chunked_report_is_read_and_stored(server):
    body = json.dumps(report(run_id="chunked-1", collected=4321)).encode()
    status, _, answer = post(server, body, chunked=True, chunk_size=7)
    assert status == 201, answer
    assert answer["run_id"] == "chunked-1"
    # The same report with a Content-Length is a repeat of the one that came in chunks.
    status, _, _ = post(server, body, chunked=False)
    assert status == 200


def test_a_chunked_report_of_exactly_the_limit_is_accepted(server):
    body = padded(LIMIT, run_id="chunked-at-limit")
    assert len(body) == LIMIT
    status, _, answer = post(server, body, chunked=True)
    assert status == 201, answer


def test_a_chunked_report_over_the_limit_is_413_with_a_json_body(server):
    body = padded(LIMIT + 1, run_id="chunked-over-limit")
    status, _, answer = post(server, body, chunked=True)
    assert status == 413
    assert answer["errors"] == [] and str(LIMIT) in answer["detail"]
    # Nothing of it was stored: the same run_id within the limit is new.
    status, _, _ = post(server, padded(LIMIT, run_id="chunked-over-limit"), chunked=True)
    assert status == 201


def test_a_report_with_a_content_length_over_the_limit_is_413_too(server):
    status, _, answer = post(server, padded(LIMIT + 1, run_id="plain-over-limit"), chunked=False)
    assert status == 413 and answer["errors"] == []


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", "400"),  # a length that is no number
        (b"GARBAGE\r\n\r\n", "400"),  # no request line
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", "431"),  # a header too large
    ],
)
def test_a_request_the_server_cannot_read_is_answered_with_a_json_error_body(server, request_bytes, status):
    with socket.create_connection(("127.0.0.1", server[0]), timeout=10) as sock:
        sock.sendall(request_bytes)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").split("\r\n")
    assert status_line.split()[1] == status, answer[:300]
    assert "Content-Type: application/json" in headers, headers
    error = json.loads(body[: int(next(h for h in headers if h.startswith("Content-Length")).split(":")[1])])
    assert set(error) == {"detail", "errors"} and error["detail"], error
    assert b"<html" not in body


def test_the_crawler_kit_reads_the_413_of_a_report_cut_off_mid_send_and_posts_the_next(server, tmp_path):
    # Far over the limit, the service answers 413 before reading the body and closes: the kit's send
    # breaks ("Broken pipe"). Taken for an unreachable service, the report was spooled (exit 75) and
    # re-sent, refused unseen, ahead of every later report of this spool, which exited 75 too.
    port, token = server
    poster = ReportPoster(f"http://127.0.0.1:{port}", token, spool_dir=tmp_path, max_attempts=2, backoff_seconds=0)
    urls = [f"https://shop.test/list?page={n}&q=" + "x" * 1_900 for n in range(8_000)]
    oversized = report(
        source="kit-spool", run_id="kit-oversized", pages={"fetched": 1, "lost": 8_000, "lost_urls": urls}
    )
    refused = poster.post(oversized)
    assert (refused.outcome, refused.http_status, refused.exit_code) == ("rejected", 413, 65), refused.message
    assert str(LIMIT) in refused.message and poster.spooled_paths() == []
    assert (tmp_path / "rejected").is_dir()
    judged = poster.post(report(source="kit-spool", run_id="kit-after-oversized"))
    assert (judged.http_status, judged.exit_code, judged.flushed) == (201, 0, []), judged.message
