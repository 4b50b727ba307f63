"""Content-Security-Policy on every answer (Django 5.2 has none of its own; 6.0 will).

The pages load scripts and styles only from this origin: plotly.js and charts.js are static files,
and a chart's figure travels as a `<script type="application/json">` block, which is data, never run.
A script that must be inline carries the request's nonce: `<script nonce="{{ csp_nonce }}">` (the
context processor below puts it in every template). Styles allow 'unsafe-inline' because plotly.js
writes style attributes as it draws; a style cannot run code, and every other directive is strict.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(16)
        # Django's way of handing a value to the views and templates; the stubs know only its own.
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and HEADER not in response:
            response[HEADER] = settings.CONTENT_SECURITY_POLICY.replace("{nonce}", nonce)
        return response


def csp_nonce(request: HttpRequest) -> dict[str, str]:
    return {"csp_nonce": getattr(request, "csp_nonce", "")}
