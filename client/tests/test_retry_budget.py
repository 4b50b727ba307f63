from __future__ import annotations

import asyncio

import pytest

from completeness_client import BudgetExhausted, ManualClock, ProxyPool, ProxyState, RetryBudget, call_with_budget


class FlakyOperation:
    """Fails `failures` times (each failure taking `seconds` of the clock), then succeeds."""

    def __init__(self, clock: ManualClock, failures: int, seconds: float, exc: Exception | None = None) -> None:
        self.clock, self.failures, self.seconds = clock, failures, seconds
        self.exc = exc or ConnectionRefusedError("refused")
        self.calls: list[tuple[float, str | None]] = []

    def __call__(self, timeout: float, lease) -> str:
        self.calls.append((timeout, lease.proxy if lease else None))
        self.clock.advance(min(self.seconds, timeout))
        if len(self.calls) <= self.failures:
            raise self.exc
        return "page"


def test_one_budget_bounds_all_attempts_across_all_proxies():
    """50 proxies x 3 attempts x 1 s delay once meant 56 minutes per URL."""
    clock = ManualClock()
    pool = ProxyPool([f"exit-{i}" for i in range(50)], latency_budget_seconds=120, clock=clock)
    budget = RetryBudget(120, clock=clock)
    operation = FlakyOperation(clock, failures=10_000, seconds=30)
    with pytest.raises(BudgetExhausted) as caught:
        call_with_budget(
            operation,
            budget,
            pool=pool,
            per_attempt_timeout=30,
            retry_delay=1,
            classify_proxy_failure=lambda exc: "connect_refused",
            sleep=clock.advance,
        )
    assert budget.elapsed <= 120
    assert caught.value.attempts == 4 == len({proxy for _, proxy in operation.calls})
    assert isinstance(caught.value.last_error, ConnectionRefusedError)


def test_last_attempt_timeout_is_cut_to_what_is_left():
    clock = ManualClock()
    budget = RetryBudget(100, clock=clock)
    operation = FlakyOperation(clock, failures=10, seconds=40)
    with pytest.raises(BudgetExhausted):
        call_with_budget(operation, budget, per_attempt_timeout=40, retry_delay=5, sleep=clock.advance)
    # 40 + 5 + 40 + 5 = 90 s spent: the third attempt gets only the 10 s left.
    assert [t for t, _ in operation.calls] == [40, 40, 10]
    assert budget.elapsed == 100


def test_success_within_budget_returns_and_marks_proxy_healthy():
    clock = ManualClock()
    pool = ProxyPool(["a", "b"], latency_budget_seconds=60, clock=clock)
    operation = FlakyOperation(clock, failures=1, seconds=2)
    result = call_with_budget(
        operation,
        RetryBudget(120, clock=clock),
        pool=pool,
        sleep=clock.advance,
        classify_proxy_failure=lambda exc: "connect_refused",
    )
    assert result == "page"
    assert [p for _, p in operation.calls] == ["a", "b"]
    assert pool.state("a") is ProxyState.COOLING and pool.state("b") is ProxyState.ELIGIBLE


def test_non_retryable_error_is_raised_at_once():
    clock = ManualClock()
    operation = FlakyOperation(clock, failures=5, seconds=1, exc=ValueError("parse error"))
    with pytest.raises(ValueError):
        call_with_budget(
            operation,
            RetryBudget(120, clock=clock),
            sleep=clock.advance,
            is_retryable=lambda exc: not isinstance(exc, ValueError),
        )
    assert len(operation.calls) == 1


def test_waits_for_a_cooling_pool_only_if_the_budget_allows():
    clock = ManualClock()
    pool = ProxyPool(["only"], latency_budget_seconds=30, clock=clock)
    pool.failed(pool.acquire(), "connect_timeout")
    operation = FlakyOperation(clock, failures=0, seconds=1)
    assert call_with_budget(operation, RetryBudget(60, clock=clock), pool=pool, sleep=clock.advance) == "page"
    assert operation.calls == [(30.0, "only")]  # waited the 30 s cooldown, then the probe
    assert pool.state("only") is ProxyState.ELIGIBLE

    pool.failed(pool.acquire(), "connect_timeout")
    with pytest.raises(BudgetExhausted):
        call_with_budget(operation, RetryBudget(20, clock=clock), pool=pool, sleep=clock.advance)
    assert len(operation.calls) == 1


def test_a_cancelled_probe_hands_its_proxy_back_for_the_next_probe():
    # asyncio.wait_for around a crawl step cancels the attempt: the probe's proxy stayed probe_allowed
    # with its probe "in flight" for good, and was never leased again.
    clock = ManualClock()
    pool = ProxyPool(["only"], latency_budget_seconds=30, clock=clock)
    pool.failed(pool.acquire(), "connect_timeout")
    clock.advance(30)

    def cancelled(timeout: float, lease) -> str:
        assert lease.is_probe
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        call_with_budget(cancelled, RetryBudget(60, clock=clock), pool=pool, sleep=clock.advance)
    assert pool.seconds_until_available() == 0.0 and pool.acquire().is_probe
    assert pool.failure_counts() == {"only": {"connect_timeout": 1}}  # no outcome: counted neither way


def test_a_cancelled_ordinary_request_leaves_its_proxy_as_it_was():
    clock = ManualClock()
    pool = ProxyPool(["a"], latency_budget_seconds=30, clock=clock)

    def interrupted(timeout: float, lease) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call_with_budget(interrupted, RetryBudget(60, clock=clock), pool=pool, sleep=clock.advance)
    assert pool.state("a") is ProxyState.ELIGIBLE and pool.transitions == []


def test_budget_rejects_nonsense():
    with pytest.raises(ValueError):
        RetryBudget(0)


def test_attempt_cap_stops_a_fast_failing_url_well_inside_the_budget():
    clock = ManualClock()
    operation = FlakyOperation(clock, failures=100, seconds=0.01)
    with pytest.raises(BudgetExhausted) as caught:
        call_with_budget(operation, RetryBudget(120, clock=clock), retry_delay=0.1, max_attempts=3, sleep=clock.advance)
    assert caught.value.attempts == 3 == len(operation.calls)
    uncapped = FlakyOperation(clock, failures=100, seconds=0.01)
    with pytest.raises(BudgetExhausted) as caught:
        call_with_budget(uncapped, RetryBudget(1, clock=clock), retry_delay=0.1, sleep=clock.advance)
    assert caught.value.attempts > 3
