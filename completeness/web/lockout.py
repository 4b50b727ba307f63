"""The answer to a locked-out login (django-axes calls it: settings.AXES_LOCKOUT_CALLABLE)."""

from __future__ import annotations

import math

from axes.conf import settings as axes_settings
from axes.helpers import get_cool_off, get_lockout_message
from django.http import HttpRequest, HttpResponse


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
