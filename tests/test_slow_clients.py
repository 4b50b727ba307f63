"""Slow clients cannot starve the service: the Procfile's web line (gunicorn with
gunicorn.conf.py, 4 workers), on 127.0.0.1, with 20 clients dripping a header byte every 2 s, and then
also 4 bodies dripped under a 1 MiB Content-Length and 4 bodies of 128 KB of `\\"` runs: /healthz
answers within a second all along. With sync workers (the Procfile before) it did not answer at all
(docs/benchmarks.md, "Slow clients")."""

from __future__ import annotations

import time

import pytest

from bench.slow_clients import SlowClients, get, heavy_bodies
from tests.web_process import procfile_web


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with procfile_web(tmp_path_factory.mktemp("slow"), workers=4) as server:
        yield server


def assert_healthz_answers_within_a_second(port: int, times: int = 4) -> None:
    for _ in range(times):
        started = time.monotonic()
        assert get(port, "/healthz", timeout=5) == 200
        assert time.monotonic() - started < 1.0
        time.sleep(0.5)


def test_twenty_clients_dripping_headers_leave_healthz_answering_within_a_second(web):
    port, _ = web
    with SlowClients(port) as slow:
        slow.open_headers(20)
        # Past two drips: every slow connection has sent bytes since it was accepted, and holds on.
        time.sleep(2.1)
        assert_healthz_answers_within_a_second(port)
        assert len(slow.sockets) == 20 and slow.dropped == 0


def test_and_four_dripped_bodies_and_four_pathological_bodies_at_once(web):
    port, token = web
    with SlowClients(port) as slow:
        slow.open_headers(20)
        slow.open_bodies(4, token)
        heavy = heavy_bodies(port, token, 4)
        time.sleep(2.1)
        assert_healthz_answers_within_a_second(port)
        assert slow.dropped == 0
        for thread in heavy:
            thread.join(timeout=30)
            assert not thread.is_alive()
