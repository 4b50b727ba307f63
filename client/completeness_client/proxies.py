"""Proxy pool with cooldown.

A proxy that misses one deadline is not dead: deleting it turns a temporary
outage into a silent, permanent loss of capacity. Here a temporary failure
cools a proxy until a deadline, one controlled probe tests its recovery, and
only an operator or a permanent condition (revoked account) excludes it, with
its record kept. Failure kinds are counted apart, never in one "dead proxy"
counter. Deadlines use the monotonic clock; only report timestamps use the
wall clock.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .clock import SYSTEM_CLOCK, Clock, isoformat, wall_time_after


class ProxyState(StrEnum):
    ELIGIBLE = "eligible"
    COOLING = "cooling"
    PROBE_ALLOWED = "probe_allowed"
    EXCLUDED = "excluded"


# Temporary failures: the proxy cools down and is probed later.
TEMPORARY_REASONS: dict[str, str] = {
    "connect_refused": "connect",
    "connect_timeout": "connect",
    "auth_rejected": "auth",
    "slow_body": "body",
    "destination_http_error": "request",
}
# Permanent conditions: the proxy is excluded, its record kept.
PERMANENT_REASONS: dict[str, str] = {
    "account_revoked": "auth",
    "operator_removed": "operator",
}
TRANSITION_REASONS: tuple[str, ...] = (
    "connect_refused",
    "connect_timeout",
    "auth_rejected",
    "slow_body",
    "destination_http_error",
    "probe_succeeded",
    "probe_failed",
    "cooldown_expired",
    "operator_removed",
    "account_revoked",
)
STAGES: tuple[str, ...] = ("connect", "tls", "auth", "request", "body", "probe", "operator")

# `user:pass@host` or `user@host`: the shape of a proxy URL carrying credentials.
_CREDENTIALS = re.compile(r"(^|[/\s])[^/@\s]+(:[^/@\s]*)?@")


def proxy_id_has_credentials(proxy_id: str) -> bool:
    return bool(_CREDENTIALS.search(proxy_id))


class ProxyCredentialsError(ValueError):
    """A proxy id carries credentials; ids must be opaque."""


class ProxyUnavailable(LookupError):
    pass


@dataclass
class ProxyRecord:
    proxy: str
    endpoint: str | None = None  # the real address; never reported
    state: ProxyState = ProxyState.ELIGIBLE
    cooling_until: float | None = None  # monotonic deadline
    failure_streak: int = 0  # consecutive failed cooldowns, drives the extension
    failures: Counter[str] = field(default_factory=Counter)
    successes: int = 0
    probe_in_flight: bool = False
    excluded_reason: str | None = None
    last_used: int = -1  # lease sequence number, for least-recently-used rotation


@dataclass(frozen=True)
class ProxyLease:
    """One use of one proxy; hand it back with `succeeded()` or `failed()`."""

    proxy: str
    endpoint: str | None
    is_probe: bool


class ProxyPool:
    """Thread-safe pool.

    `latency_budget_seconds` is the operation's latency budget: a proxy that
    failed sits out at least one such budget (so the operation that saw it fail
    does not immediately reuse it); each further failure in a row doubles the
    cooldown, bounded by `max_cooldown_factor` budgets.
    """

    def __init__(
        self,
        proxies: dict[str, str | None] | list[str] | None = None,
        *,
        latency_budget_seconds: float = 120.0,
        max_cooldown_factor: float = 8.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if latency_budget_seconds <= 0 or max_cooldown_factor < 1:
            raise ValueError("latency budget must be > 0 and max_cooldown_factor >= 1")
        self.latency_budget_seconds = latency_budget_seconds
        self.max_cooldown_seconds = latency_budget_seconds * max_cooldown_factor
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, ProxyRecord] = {}
        self.transitions: list[dict[str, Any]] = []
        self._leases = 0
        items = proxies.items() if isinstance(proxies, dict) else ((p, None) for p in proxies or [])
        for proxy_id, endpoint in items:
            self.add(proxy_id, endpoint)

    # -- membership -----------------------------------------------------------

    def add(self, proxy_id: str, endpoint: str | None = None) -> None:
        if not proxy_id or proxy_id_has_credentials(proxy_id):
            raise ProxyCredentialsError(
                "proxy ids are opaque and must not carry credentials (user:pass@); pass the real address as `endpoint`"
            )
        with self._lock:
            if proxy_id in self._records:
                raise ValueError(f"proxy {proxy_id!r} is already in the pool")
            self._records[proxy_id] = ProxyRecord(proxy=proxy_id, endpoint=endpoint)

    def remove(self, proxy_id: str) -> None:
        """Operator removal: excluded for good, the record stays."""
        self._exclude(proxy_id, "operator_removed")

    def revoke(self, proxy_id: str) -> None:
        """The proxy provider revoked the account: a permanent condition."""
        self._exclude(proxy_id, "account_revoked")

    # -- reading --------------------------------------------------------------

    def record(self, proxy_id: str) -> ProxyRecord:
        with self._lock:
            self._promote_expired()
            return self._records[proxy_id]

    def state(self, proxy_id: str) -> ProxyState:
        return self.record(proxy_id).state

    def failure_counts(self) -> dict[str, dict[str, int]]:
        """Failure kinds per proxy, counted apart."""
        with self._lock:
            return {p: dict(r.failures) for p, r in self._records.items() if r.failures}

    def seconds_until_available(self) -> float | None:
        """How long until some proxy may be leased again; None if never."""
        with self._lock:
            self._promote_expired()
            now = self._clock.monotonic()
            waits = []
            for rec in self._records.values():
                if rec.state is ProxyState.ELIGIBLE or (
                    rec.state is ProxyState.PROBE_ALLOWED and not rec.probe_in_flight
                ):
                    return 0.0
                if rec.state is ProxyState.COOLING and rec.cooling_until is not None:
                    waits.append(max(0.0, rec.cooling_until - now))
            return min(waits) if waits else None

    # -- leasing --------------------------------------------------------------

    def acquire(self) -> ProxyLease:
        """A proxy to use now: a pending recovery probe first (one request per
        cooled proxy, never the whole queue), else the least recently used
        eligible proxy. Raises ProxyUnavailable when none may be used now."""
        with self._lock:
            self._promote_expired()
            self._leases += 1
            for rec in self._records.values():
                if rec.state is ProxyState.PROBE_ALLOWED and not rec.probe_in_flight:
                    rec.probe_in_flight = True
                    rec.last_used = self._leases
                    return ProxyLease(rec.proxy, rec.endpoint, is_probe=True)
            eligible = [r for r in self._records.values() if r.state is ProxyState.ELIGIBLE]
            if not eligible:
                raise ProxyUnavailable("no eligible proxy and no probe due")
            rec = min(eligible, key=lambda r: r.last_used)
            rec.last_used = self._leases
            return ProxyLease(rec.proxy, rec.endpoint, is_probe=False)

    def succeeded(self, lease: ProxyLease) -> None:
        with self._lock:
            rec = self._records[lease.proxy]
            rec.successes += 1
            if lease.is_probe and rec.state is ProxyState.PROBE_ALLOWED:
                rec.probe_in_flight = False
                rec.failure_streak = 0
                rec.cooling_until = None
                self._transition(rec, ProxyState.ELIGIBLE, "probe_succeeded", "probe")
            elif rec.state is ProxyState.ELIGIBLE:
                rec.failure_streak = 0

    def release(self, lease: ProxyLease) -> None:
        """Hand back a lease whose request ended with no outcome (cancelled, interrupted): it counts
        neither way. A probe's proxy may be probed again; held by a probe that never came back, it
        stayed `probe_allowed` and was never leased again, a silent permanent loss of capacity."""
        with self._lock:
            rec = self._records[lease.proxy]
            if lease.is_probe and rec.state is ProxyState.PROBE_ALLOWED:
                rec.probe_in_flight = False

    def failed(self, lease: ProxyLease, reason: str, stage: str | None = None) -> None:
        """Report a failure of `lease`. `reason` is one of the temporary reasons
        (connect_refused, connect_timeout, auth_rejected, slow_body,
        destination_http_error) or account_revoked; `stage` defaults to where
        that reason usually happens."""
        if reason in PERMANENT_REASONS:
            with self._lock:
                self._records[lease.proxy].failures[reason] += 1
            self._exclude(lease.proxy, reason, stage)
            return
        if reason not in TEMPORARY_REASONS:
            raise ValueError(f"unknown failure reason {reason!r}")
        stage = stage or TEMPORARY_REASONS[reason]
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        with self._lock:
            rec = self._records[lease.proxy]
            rec.failures[reason] += 1
            if lease.is_probe and rec.state is ProxyState.PROBE_ALLOWED:
                rec.probe_in_flight = False
                # Where the probe failed, not "probe": a provider gone (connect) and an exit still
                # slow (body) read the same on every later transition otherwise.
                self._cool(rec, "probe_failed", stage)
            elif rec.state is ProxyState.ELIGIBLE:
                self._cool(rec, reason, stage)
            # A failure of a request leased before the proxy cooled is already
            # paid for by the running cooldown: counted above, nothing more.

    # -- internals ------------------------------------------------------------

    def cooldown_seconds(self, failure_streak: int) -> float:
        return min(
            self.max_cooldown_seconds,
            self.latency_budget_seconds * 2 ** max(0, failure_streak - 1),
        )

    def _cool(self, rec: ProxyRecord, reason: str, stage: str) -> None:
        rec.failure_streak += 1
        seconds = self.cooldown_seconds(rec.failure_streak)
        rec.cooling_until = self._clock.monotonic() + seconds
        self._transition(
            rec,
            ProxyState.COOLING,
            reason,
            stage,
            until=isoformat(wall_time_after(self._clock, seconds)),
        )

    def _promote_expired(self) -> None:
        now = self._clock.monotonic()
        for rec in self._records.values():
            if rec.state is ProxyState.COOLING and rec.cooling_until is not None and now >= rec.cooling_until:
                rec.probe_in_flight = False
                self._transition(rec, ProxyState.PROBE_ALLOWED, "cooldown_expired", "probe")

    def _exclude(self, proxy_id: str, reason: str, stage: str | None = None) -> None:
        with self._lock:
            rec = self._records[proxy_id]
            if rec.state is ProxyState.EXCLUDED:
                return
            rec.excluded_reason = reason
            rec.probe_in_flight = False
            rec.cooling_until = None
            self._transition(rec, ProxyState.EXCLUDED, reason, stage or PERMANENT_REASONS[reason])

    def _transition(self, rec: ProxyRecord, to: ProxyState, reason: str, stage: str, until: str | None = None) -> None:
        entry: dict[str, Any] = {
            "proxy": rec.proxy,
            "at": isoformat(self._clock.now()),
            "from": rec.state.value,
            "to": to.value,
            "reason": reason,
            "stage": stage,
        }
        if until is not None:
            entry["until"] = until
        rec.state = to
        self.transitions.append(entry)

    def to_report(self) -> list[dict[str, Any]]:
        """The run report's `proxy_transitions` array."""
        with self._lock:
            self._promote_expired()
            return [dict(t) for t in self.transitions]


def proxy_failure_reason(exc: BaseException) -> str | None:
    """The proxy's part in a failed request, as a TEMPORARY_REASONS reason, or None where the failure
    is not the proxy's (a destination's own error, a bug). By exception type names and the standard
    library's wrapping, so requests, urllib3, httpx and urllib read alike without importing them:

    - refused, or a proxy error that names no other cause: `connect_refused`;
    - a 407 (Proxy Authentication Required) anywhere in it: `auth_rejected`;
    - a timeout while connecting (`ConnectTimeout`, or urllib's URLError around a timeout):
      `connect_timeout`;
    - a timeout once connected (`ReadTimeout`, a bare `TimeoutError`): `slow_body`.

    `call_with_budget` uses it with a pool unless told otherwise: without it, every failure through a
    proxy counted as that proxy's success, and a pool whose exits had all died never cooled one."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(chain) < 8:
        seen.add(id(current))
        chain.append(current)
        reason = getattr(current, "reason", None)  # urllib's URLError, urllib3's wrappers
        nested = reason if isinstance(reason, BaseException) else None
        current = nested or current.__cause__ or current.__context__
    names = [type(link).__name__.lower() for link in chain]
    # A status as urllib (`code`), httpx (`status_code`) or requests (`response.status_code`) carry it;
    # a 407 in a message's URL is no 407, so the status's own words are read instead.
    codes = {
        getattr(holder, attribute, None)
        for link in chain
        for holder in (link, getattr(link, "response", None))
        for attribute in ("code", "status_code", "status")
    }
    if 407 in codes or any("proxy authentication required" in str(link).lower() for link in chain):
        return "auth_rejected"
    if any(isinstance(link, ConnectionRefusedError) for link in chain) or any("refused" in n for n in names):
        return "connect_refused"
    if any("connecttimeout" in n for n in names):
        return "connect_timeout"
    if any("readtimeout" in n for n in names):
        return "slow_body"
    if any(isinstance(link, TimeoutError) or "timeout" in n for link, n in zip(chain, names, strict=True)):
        # urllib wraps what failed while connecting in a URLError; a read's timeout comes bare.
        return "connect_timeout" if names[0] == "urlerror" else "slow_body"
    if any("proxyerror" in n for n in names):
        return "connect_refused"
    return None
