"""Content-Security-Policy on every answer (Django 5.2 has none of its own; 6.0 will).

The pages load scripts and styles only from this origin: plotly.js and charts.js are static files,
and a chart's figure travels as a `<script type="application/json">` block, which is data, never run.
A script that must be inline carries the request's nonce: `<script nonce="{{ csp_nonce }}">` (the
context processor below puts it in every template). Styles allow 'unsafe-inline' because plotly.js
writes style attributes as it draws; a style cannot run code, and every other directive is strict.

And whether a request was sent from this machine (from_this_machine), for what is open to it alone.
"""

from __future__ import annotations

import ipaddress
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


# The headers by which reverse proxies pass a client on (nginx's proxy_set_header X-Real-IP, Apache,
# Cloudflare, Akamai, Envoy, Via from any HTTP proxy). Any one of them means someone else sent it.
_FORWARDING_HEADERS = (
    "HTTP_X_FORWARDED_FOR",
    "HTTP_FORWARDED",
    "HTTP_X_REAL_IP",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_CLIENT_IP",
    "HTTP_X_CLUSTER_CLIENT_IP",
    "HTTP_TRUE_CLIENT_IP",
    "HTTP_CF_CONNECTING_IP",
    "HTTP_X_ENVOY_EXTERNAL_ADDRESS",
    "HTTP_VIA",
)


def from_this_machine(request: HttpRequest) -> bool:
    """Sent from the loopback address, and not through a proxy: /metrics without a token, the demo
    login with its public password (sources/demo/backend.py)."""
    # A reverse proxy on the same host connects from the loopback address too: a request it forwarded
    # carries one of its headers and is treated as coming from outside. A proxy configured to pass the
    # client only as X-Real-IP (nginx's common example) made every outside scrape look local.
    if not settings.TRUST_LOOPBACK or any(header in request.META for header in _FORWARDING_HEADERS):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False
