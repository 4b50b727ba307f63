"""What django-axes asks of us: the answer to a locked-out login (settings.AXES_LOCKOUT_CALLABLE) and
who is signing in (settings.AXES_CLIENT_IP_CALLABLE)."""

from __future__ import annotations

import ipaddress
import math

from axes.conf import settings as axes_settings
from axes.helpers import get_cool_off, get_lockout_message
from django.http import HttpRequest, HttpResponse

from completeness.web.throttle import client_address


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: object = None
) -> HttpResponse:
    """axes' own answer (429 and its message), with Retry-After: the cool-off, after which the
    username and address pair may try again. A person reads the message; a script or a password
    manager reads the header instead of hammering the form."""
    response = HttpResponse(get_lockout_message(), status=axes_settings.AXES_HTTP_RESPONSE_CODE)
    cool_off = get_cool_off(request)
    if cool_off:
        response["Retry-After"] = str(max(1, math.ceil(cool_off.total_seconds())))
    return response


def client_ip(request: HttpRequest) -> str | None:
    """The address the rate limits count (behind a proxy, the client it names), or None where there is
    none: axes stores it in an address column, which PostgreSQL holds to addresses, and the limits'
    "unknown" (a login made without a request's peer, such as a test's force_login) was refused there."""
    address = client_address(request)
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None
