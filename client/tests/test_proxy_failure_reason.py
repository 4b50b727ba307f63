"""`proxy_failure_reason`, the default with which `call_with_budget` tells a pool what its proxy did,
read from the errors real HTTP clients raise against real sockets on 127.0.0.1: a proxy that refuses,
one that accepts and never answers, one whose backlog is full (a connect that times out), one that
asks for credentials (407), and one that forwards a destination's 500 (not the proxy's fault)."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from local_site import LocalSite

from completeness_client import ProxyPool, ProxyState, RetryBudget, call_with_budget, proxy_failure_reason

requests = pytest.importorskip("requests")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def silent_proxy() -> Iterator[int]:
    """Accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@contextmanager
def full_backlog() -> Iterator[int]:
    """Listens, accepts nothing, and its one queue slot is taken: a new connect waits for its SYN's
    answer until it times out, as a proxy host that is gone does."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    held = []
    try:
        for _ in range(4):  # fill the queue (Linux keeps backlog + 1)
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
            held.append(client)
        yield port
    finally:
        for client in held:
            client.close()
        server.close()


class AnsweringProxy(LocalSite):
    """Answers every request with one status, as a proxy asking for credentials (407) or forwarding a
    destination's error does (a proxy is sent the whole URL, which the site's handler takes as a path)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__()
        self.status, self.reason = status, reason

    def answer(self, path: str) -> tuple[int, bytes]:
        return self.status, self.reason.encode()


@contextmanager
def answering_proxy(status: int, reason: str) -> Iterator[int]:
    with AnsweringProxy(status, reason) as proxy:
        yield int(proxy.url.rsplit(":", 1)[1])


def urllib_error(proxy_port: int, timeout: float = 0.5) -> BaseException:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy_port}"}))
    try:
        opener.open("http://catalogue.example/p/407", timeout=timeout)
    except Exception as exc:  # the error is what is under test
        return exc
    raise AssertionError("the request went through")


def requests_error(proxy_port: int, timeout: float = 0.5) -> BaseException:
    proxy = f"http://127.0.0.1:{proxy_port}"
    try:
        response = requests.get("http://catalogue.example/p/407", proxies={"http": proxy}, timeout=timeout)
        response.raise_for_status()
    except Exception as exc:
        return exc
    raise AssertionError("the request went through")


CLIENTS = {"urllib": urllib_error, "requests": requests_error}


@pytest.mark.parametrize("client", CLIENTS)
def test_a_proxy_that_refuses_is_connect_refused(client):
    assert proxy_failure_reason(CLIENTS[client](closed_port())) == "connect_refused"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_proxy_that_never_answers_is_a_slow_body(client):
    with silent_proxy() as port:
        assert proxy_failure_reason(CLIENTS[client](port)) == "slow_body"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_proxy_that_cannot_be_reached_in_time_is_a_connect_timeout(client):
    with full_backlog() as port:
        assert proxy_failure_reason(CLIENTS[client](port)) == "connect_timeout"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_proxy_asking_for_credentials_is_auth_rejected(client):
    with answering_proxy(407, "Proxy Authentication Required") as port:
        assert proxy_failure_reason(CLIENTS[client](port)) == "auth_rejected"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_destinations_own_error_through_a_working_proxy_is_not_the_proxys(client):
    # The path holds "407": a status is read from the answer, not from a URL in a message.
    with answering_proxy(500, "Internal Server Error") as port:
        assert proxy_failure_reason(CLIENTS[client](port)) is None


def test_call_with_budget_cools_a_dead_proxy_by_default_and_keeps_the_one_that_works():
    # Before, with no classifier given, every failure counted as the proxy's success: a pool whose
    # exits had all died never cooled one.
    dead = f"http://127.0.0.1:{closed_port()}"
    with answering_proxy(200, "ok") as port:
        alive = f"http://127.0.0.1:{port}"
        pool = ProxyPool([dead, alive], latency_budget_seconds=5)

        def attempt(timeout: float, lease) -> str:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": lease.proxy}))
            with opener.open("http://catalogue.example/", timeout=timeout) as response:
                return response.read().decode()

        results = [call_with_budget(attempt, RetryBudget(10), pool=pool, retry_delay=0) for _ in range(4)]
    assert results == ["ok"] * 4
    states = {record["proxy"]: record["to"] for record in pool.to_report()}
    assert states.get(dead) == ProxyState.COOLING.value and alive not in states
