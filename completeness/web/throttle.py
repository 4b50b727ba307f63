"""Rate limits of the API and the password-reset form: fixed-window counters in Django's cache.

Every worker counts in the same cache: files shared by the processes of one machine by default
(completeness/web/counters.py, whose `add` and `incr` are atomic across processes), or Redis at
CACHE_URL. Logins are throttled by django-axes (settings.AXES_*), on the database.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from ninja.errors import Throttled

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


class Limit:
    """One limit, named by the setting that holds its rate; `ident` is what it counts per."""

    def __init__(self, scope: str, setting: str):
        self.scope = scope
        self.setting = setting

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
        # Counting on first, as most hits find their window's counter: one call to the cache, not two.
        try:
            count = cache.incr(key)
        except ValueError:  # the window's first hit (or its counter just expired)
            if cache.add(key, 1, timeout=rate.seconds + 1):
                count = 1
            else:  # another worker started the window meanwhile
                count = cache.incr(key)
        if count > rate.count:
            raise Throttled(wait=max(1, math.ceil(left)))

    def check(self, ident: str) -> None:
        """Raise Throttled if the window is already over the rate, without counting this request."""
        rate = self.rate
        if rate is None:
            return
        key, left = self._key(ident, rate, time.time())
        if (cache.get(key) or 0) >= rate.count:
            raise Throttled(wait=max(1, math.ceil(left)))


API_PER_ADDRESS = Limit("api-address", "API_RATE_PER_ADDRESS")
API_PER_TOKEN = Limit("api-token", "API_RATE_PER_TOKEN")
# Guessing tokens: once an address has sent this many unknown ones, it gets 429 for every call.
API_FAILED_TOKENS = Limit("api-failed-token", "API_FAILED_TOKENS_PER_ADDRESS")
PASSWORD_RESETS = Limit("password-reset", "PASSWORD_RESET_RATE_PER_ADDRESS")


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"
