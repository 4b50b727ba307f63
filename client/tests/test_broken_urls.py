"""Broken URLs are no outage and no load: the breaker counts
a URL once however often it is retried, judges probes by URLs not known to be
broken, and the pacing does not slow a slot down for one URL's failures."""

from __future__ import annotations

from types import SimpleNamespace

from completeness_client import BreakerState, FailureWindowBreaker, ManualClock
from completeness_client.scrapy_kit.pacing import Pacing


def _tail_of_retries(key_urls: bool) -> FailureWindowBreaker:
    """Booksbot's shape: 1,000 detail pages, every tenth permanently 500,
    each retried twice; the retries come last, when little else is left."""
    breaker = FailureWindowBreaker(clock=ManualClock())
    for n in range(1000):
        broken = n % 10 == 0
        breaker.record("http_5xx" if broken else "ok", key=f"/book/{n}" if key_urls else None)
    for _ in range(2):
        for n in range(0, 1000, 10):
            breaker.record("http_5xx", key=f"/book/{n}" if key_urls else None)
    return breaker


def test_a_tail_of_retries_of_broken_pages_does_not_trip_the_breaker():
    assert _tail_of_retries(key_urls=True).state is BreakerState.RUNNING
    assert _tail_of_retries(key_urls=True).repeated_failures == 200
    assert _tail_of_retries(key_urls=False).state is not BreakerState.RUNNING  # counted per attempt, it trips


def test_a_probe_takes_urls_not_known_to_be_broken_while_there_are_any():
    clock = ManualClock()
    breaker = FailureWindowBreaker(size=20, min_samples=10, probe_size=5, pause_seconds=1, clock=clock)
    for n in range(10):
        breaker.record("timeout", key=f"/a/{n}")
    assert breaker.state is BreakerState.PAUSED
    clock.advance(2)
    # A retry of a URL already known to be broken waits while fresh URLs can be probed ...
    assert not breaker.admit("/a/1", fresh_waiting=True).allowed
    for n in range(5):
        admission = breaker.admit(f"/b/{n}", fresh_waiting=True)
        assert admission.allowed
        breaker.record("ok", admission, key=f"/b/{n}")
    assert breaker.state is BreakerState.RUNNING
    assert [e["kind"] for e in breaker.events] == ["tripped", "probe", "resumed"]
    # ... and takes part when nothing else is there to probe (an outage's re-queued requests).
    for n in range(10):
        breaker.record("timeout", key=f"/c/{n}")
    clock.advance(2)
    assert breaker.admit("/a/1", fresh_waiting=False).allowed


def test_a_url_that_recovers_is_no_longer_known_broken():
    breaker = FailureWindowBreaker()
    breaker.record("http_5xx", key="/x")
    assert breaker.known_broken("/x")
    breaker.record("ok", key="/x")
    assert not breaker.known_broken("/x")


def test_one_urls_repeated_failures_do_not_raise_its_slots_delay():
    pacing = Pacing(enabled=True, backoff=2.0, recovery=0.99, start_delay=0.25)
    slot = SimpleNamespace(delay=0.0)
    for _ in range(3):  # a permanently broken URL: the first attempt and two retries
        pacing.observe("shop", slot, "http_5xx", status=500, url="/book/7")
    assert slot.delay <= 0.25
    for n in range(3):  # three different URLs failing: that is load
        pacing.observe("shop", slot, "http_5xx", status=500, url=f"/book/{n}")
    assert slot.delay >= 2.0
