"""One total time budget per URL, across all proxies and attempts.

Budgets multiplied out (attempts x proxies x delay) once added up to 56 minutes
for a single URL. Here every attempt's timeout and every delay between attempts
is cut to what is left of one budget, and the URL is given up when it is spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from .clock import SYSTEM_CLOCK, Clock
from .proxies import ProxyLease, ProxyPool, ProxyUnavailable, proxy_failure_reason

T = TypeVar("T")


class BudgetExhausted(Exception):
    """The URL's time budget is spent; `last_error` is the last failure seen."""

    def __init__(self, message: str, attempts: int, last_error: BaseException | None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


class RetryBudget:
    def __init__(self, total_seconds: float = 120.0, clock: Clock = SYSTEM_CLOCK) -> None:
        if total_seconds <= 0:
            raise ValueError("a budget must be positive")
        self.total_seconds = total_seconds
        self._clock = clock
        self._started = clock.monotonic()

    @property
    def elapsed(self) -> float:
        return self._clock.monotonic() - self._started

    @property
    def remaining(self) -> float:
        return max(0.0, self.total_seconds - self.elapsed)

    @property
    def exhausted(self) -> bool:
        return self.remaining <= 0.0

    def attempt_timeout(self, per_attempt_timeout: float) -> float:
        """An attempt may never outlive the budget."""
        return min(per_attempt_timeout, self.remaining)

    def delay_fits(self, delay: float) -> bool:
        """A delay is only worth taking if some budget is left after it."""
        return delay < self.remaining


def call_with_budget(
    attempt: Callable[[float, ProxyLease | None], T],
    budget: RetryBudget,
    *,
    per_attempt_timeout: float = 30.0,
    retry_delay: float = 1.0,
    is_retryable: Callable[[BaseException], bool] = lambda exc: True,
    classify_proxy_failure: Callable[[BaseException], str | None] = proxy_failure_reason,
    pool: ProxyPool | None = None,
    max_attempts: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `attempt(timeout, lease)` until it returns, a non-retryable error is
    raised, or the budget is spent (BudgetExhausted).

    With a `pool`, each attempt leases a proxy and reports its outcome:
    `classify_proxy_failure(exc)` names the proxy's failure reason (e.g.
    "connect_refused"), or None when the failure is not the proxy's fault; by
    default `proxies.proxy_failure_reason`, which reads requests', urllib3's,
    httpx's and urllib's errors.
    `max_attempts` also caps the count, so a URL that fails fast (a page that
    always answers 500) is not hammered for the whole budget.
    """
    attempts = 0
    last_error: BaseException | None = None
    while not budget.exhausted and (max_attempts is None or attempts < max_attempts):
        lease: ProxyLease | None = None
        if pool is not None:
            try:
                lease = pool.acquire()
            except ProxyUnavailable as exc:
                last_error = exc
                wait = pool.seconds_until_available()
                if wait is None or not budget.delay_fits(wait):
                    break
                sleep(wait)
                continue
        attempts += 1
        try:
            result = attempt(budget.attempt_timeout(per_attempt_timeout), lease)
        except Exception as exc:
            last_error = exc
            if pool is not None and lease is not None:
                reason = classify_proxy_failure(exc)
                if reason:
                    pool.failed(lease, reason)
                else:
                    pool.succeeded(lease)
            if not is_retryable(exc):
                raise
            if max_attempts is not None and attempts >= max_attempts:
                break
            if not budget.delay_fits(retry_delay):
                break
            sleep(retry_delay)
            continue
        except BaseException:
            # Cancelled or interrupted (asyncio's CancelledError, Ctrl-C): no outcome, but the lease
            # goes back, or a probe's proxy is never leased again.
            if pool is not None and lease is not None:
                pool.release(lease)
            raise
        if pool is not None and lease is not None:
            pool.succeeded(lease)
        return result
    raise BudgetExhausted(
        f"gave up after {attempts} attempt(s) in {budget.elapsed:.1f}s of a {budget.total_seconds:.0f}s budget",
        attempts,
        last_error,
    )
