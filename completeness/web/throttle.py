"""Rate limits of the API and the password-reset form: fixed-window counters in Django's cache.

Every worker counts in the same cache: files shared by the processes of one machine by default
(completeness/web/counters.py, whose `add` and `incr` are atomic across processes), or Redis at
CACHE_URL. Logins are throttled by django-axes (settings.AXES_*), on the database.

While the cache cannot be reached, nothing is counted and a limit fails open (the request goes on, a
warning is logged): a crawler's report is worth more than the limit, which guards the service's load,
not a secret (tokens are 256 random bits). The password-reset limit fails closed instead (see
PASSWORD_RESETS).
"""

from __future__ import annotations

import ipaddress
import math
import re
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from ninja.errors import Throttled

from completeness.web import shared_cache

_UNITS = {"s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*$")


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate | None:
        """'600/min', '20/10min', '5/hour'; 'off' (or empty) is no limit."""
        if text.strip().lower() in ("", "off", "none"):
            return None
        match = _RATE.match(text.lower())
        if not match or match.group(3) not in _UNITS or int(match.group(1)) < 1:
            raise ValueError(f"{text!r} is no rate: say e.g. 600/min, 20/10min, 5/hour or off")
        count, multiple, unit = match.groups()
        return cls(int(count), int(multiple or 1) * _UNITS[unit])


class Uncounted(Exception):
    """A limit that fails closed could not count: the cache cannot be reached."""


class Limit:
    """One limit, named by the setting that holds its rate; `ident` is what it counts per. Without the
    cache it lets every request through, or with `fails_closed` raises Uncounted for each."""

    def __init__(self, scope: str, setting: str, fails_closed: bool = False):
        self.scope = scope
        self.setting = setting
        self.fails_closed = fails_closed

    @property
    def rate(self) -> Rate | None:
        # Read at each use, so that a test (or a settings override) can change it.
        return Rate.parse(getattr(settings, self.setting))

    def _key(self, ident: str, rate: Rate, now: float) -> tuple[str, float]:
        window = math.floor(now / rate.seconds)
        return f"throttle:{self.scope}:{ident}:{window}", (window + 1) * rate.seconds - now

    def hit(self, ident: str) -> None:
        """Count one request; raise Throttled (429, Retry-After) once the window holds more than the rate."""
        rate = self.rate
        if rate is None:
            return
        key, left = self._key(ident, rate, time.time())
        count = shared_cache.attempt(lambda: self._count(key, rate), None, self._without)
        if count is None:
            self._uncounted()
        elif count > rate.count:
            raise Throttled(wait=max(1, math.ceil(left)))

    def check(self, ident: str) -> None:
        """Raise Throttled if the window is already over the rate, without counting this request."""
        rate = self.rate
        if rate is None:
            return
        key, left = self._key(ident, rate, time.time())
        count = shared_cache.attempt(lambda: cache.get(key) or 0, None, self._without)
        if count is None:
            self._uncounted()
        elif count >= rate.count:
            raise Throttled(wait=max(1, math.ceil(left)))

    @staticmethod
    def _count(key: str, rate: Rate) -> int:
        # Counting on first, as most hits find their window's counter: one call to the cache, not two.
        try:
            return cache.incr(key)
        except ValueError:  # the window's first hit (or its counter just expired)
            if cache.add(key, 1, timeout=rate.seconds + 1):
                return 1
            # another worker started the window meanwhile
            return cache.incr(key)

    @property
    def _without(self) -> str:
        return f"{self.setting} {'refuses' if self.fails_closed else 'lets through'} what it cannot count"

    def _uncounted(self) -> None:
        if self.fails_closed:
            raise Uncounted(self.setting)


API_PER_ADDRESS = Limit("api-address", "API_RATE_PER_ADDRESS")
API_PER_TOKEN = Limit("api-token", "API_RATE_PER_TOKEN")
# Guessing tokens: once an address has sent this many unknown ones, it gets 429 for every call.
API_FAILED_TOKENS = Limit("api-failed-token", "API_FAILED_TOKENS_PER_ADDRESS")
# Fails closed: the form mails whoever it names, and this limit is all that stops it being used to
# flood someone's mailbox (/readyz tells anyone the cache is down). A reset can wait for the cache.
PASSWORD_RESETS = Limit("password-reset", "PASSWORD_RESET_RATE_PER_ADDRESS", fails_closed=True)


def client_address(request: HttpRequest) -> str:
    """Who is calling, for every limit and for the login lockout (AXES_CLIENT_IP_CALLABLE): the peer,
    or, behind a reverse proxy (CLIENT_ADDRESS_HEADER), the client that proxy names. Every client of a
    proxy arrives from the proxy's address: counted by it, five wrong passwords from anyone locked a
    username out for every operator. X-Forwarded-For is read from its end, the address the proxy
    itself appended: what a client wrote before it is its own to choose."""
    header = settings.CLIENT_ADDRESS_HEADER
    if header:
        named = request.META.get("HTTP_" + header.upper().replace("-", "_"), "").rsplit(",", 1)[-1].strip()
        try:
            return str(ipaddress.ip_address(named))
        except ValueError:
            pass  # not through the proxy (a probe from inside): its peer
    return request.META.get("REMOTE_ADDR") or "unknown"
