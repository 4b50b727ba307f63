"""The public account pages that need more than Django gives: the password-reset form mails whoever
is named in it, so each address may ask only so often."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import PasswordResetView
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from ninja.errors import Throttled

from completeness.web import throttle


class ThrottledPasswordResetView(PasswordResetView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            throttle.PASSWORD_RESETS.hit(throttle.client_address(request))
        except Throttled as exc:
            return HttpResponse(
                render_to_string("429.html", {"wait": exc.wait}), status=429, headers={"Retry-After": str(exc.wait)}
            )
        return super().post(request, *args, **kwargs)
