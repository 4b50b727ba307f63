"""How delivery failures are classified and when the next attempt is due."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from completeness.text import one_line


class OutcomeKind(StrEnum):
    SENT = "sent"
    TRANSIENT = "transient"  # try again later: the receiver may come back
    PERMANENT = "permanent"  # the receiver said no for good: the channel is broken


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    error: str = ""
    retry_after: float | None = None

    @classmethod
    def sent(cls) -> Outcome:
        return cls(OutcomeKind.SENT)

    @classmethod
    def transient(cls, error: str, retry_after: float | None = None) -> Outcome:
        return cls(OutcomeKind.TRANSIENT, error, retry_after)

    @classmethod
    def permanent(cls, error: str) -> Outcome:
        return cls(OutcomeKind.PERMANENT, error)


@dataclass(frozen=True)
class RetryPolicy:
    base_seconds: float
    max_seconds: float
    give_up_after_seconds: float
    # A channel whose deliveries have failed this long is marked broken while they are still retried
    # (0: only once its alerts are given up).
    broken_after_seconds: float = 0.0


def classify_http(status: int, body: str = "", retry_after: str | None = None) -> Outcome:
    """2xx sent; 5xx, 408 and 429 (honouring Retry-After) transient; any other answer permanent."""
    if 200 <= status < 300:
        return Outcome.sent()
    said = answer_text(body)
    detail = f"HTTP {status}" + (f": {said}" if said else "")
    if status == 429:
        return Outcome.transient(detail, parse_retry_after(retry_after))
    if status >= 500 or status == 408:
        return Outcome.transient(detail)
    # 3xx too: a webhook that moved must be re-entered, not followed with the body dropped.
    return Outcome.permanent(detail)


def answer_text(body: str) -> str:
    """What a receiver answered, on one line: an HTML error page (a proxy's or a framework's 404) by its
    title, else its text without the markup. Quoted as sent, the error read "HTTP 404: <!doctype html>
    <html lang=...><head><meta charset=..." in the broken channel's announcement, and said nothing."""
    text = body.strip()
    if text.startswith("<"):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        text = html.unescape(title.group(1) if title else re.sub(r"<[^>]*(?:>|$)", " ", text))
    return one_line(text, 200)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; the HTTP-date form is rare for webhooks and read as absent."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def next_attempt(policy: RetryPolicy, attempts: int, now: datetime, retry_after: float | None = None) -> datetime:
    """Exponential backoff from base, capped; a receiver's Retry-After is a floor, never shortened."""
    delay = min(policy.base_seconds * 2 ** max(attempts - 1, 0), policy.max_seconds)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return now + timedelta(seconds=delay)


def retried_for(policy: RetryPolicy, attempts: int) -> float:
    """The least time `attempts` failed attempts of one notification span: the backoff between each and
    the next (a receiver's Retry-After only lengthens it)."""
    return sum((min(policy.base_seconds * (1 << (k - 1)), policy.max_seconds) for k in range(1, attempts)), 0.0)


def give_up_before(policy: RetryPolicy, next_at: datetime) -> datetime:
    """A notification first written before this instant gives up rather than retry at `next_at`: its
    retries would outlast the give-up window."""
    return next_at - timedelta(seconds=policy.give_up_after_seconds)
