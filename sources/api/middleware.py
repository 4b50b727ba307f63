"""Answers for what no single view handles: the database going away, and API errors that Django or
ninja would otherwise give as HTML or plain text (unknown paths, wrong methods, server errors)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

from completeness.text import one_line
from sources.ingest.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
API_V1 = "/api/v1"
DATABASE_DOWN: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
# Headers of the original answer that still hold for its JSON replacement.
_DROPPED_HEADERS = {"content-type", "content-length"}


# Once a minute per process, with how many were not logged: an outage under a fleet's load answers
# dozens of requests a second, and Django's own "Service Unavailable: /api/v1/runs" says each of them.
WARN_EVERY_SECONDS = 60.0
_lock = threading.Lock()
_warned_at: float | None = None
_unlogged = 0


def log_database_down(exception: Exception) -> None:
    """Says what is down and what to do: Django's line for each 503 names only the path, so an operator
    reading the web log during a PostgreSQL outage saw "Service Unavailable" and no word of the database."""
    global _warned_at, _unlogged
    now = time.monotonic()
    with _lock:
        if _warned_at is not None and now - _warned_at < WARN_EVERY_SECONDS:
            _unlogged += 1
            return
        _warned_at, unlogged, _unlogged = now, _unlogged, 0
    more = f" ({unlogged} more since the last warning)" if unlogged else ""
    logger.warning(
        "the database cannot be reached, answering 503 with Retry-After%s: %s: %s (nothing is stored and "
        "crawlers retry; check that the database DATABASE_URL names runs and accepts connections; "
        "/readyz names what is down)",
        more,
        type(exception).__name__,
        one_line(str(exception)),
    )


def database_unavailable(request: HttpRequest) -> HttpResponse:
    error = ServiceUnavailable()
    if request.path_info.startswith(API_PREFIX):
        return JsonResponse(error.body(), status=error.status, headers=error.headers)
    # Rendered without the request: its context processors would ask the database for the user.
    return HttpResponse(render_to_string("503.html"), status=error.status, headers=error.headers)


class ErrorResponsesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path_info.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return _as_json_error(response, _detail(request, response))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_DOWN):
            log_database_down(exception)
            return database_unavailable(request)
        return None


def _detail(request: HttpRequest, response: HttpResponse) -> str:
    """What went wrong, in words that say what to change: "Not Found" answered a report posted to
    `/api/v1/runs/` or to `/api/v1/api/v1/runs` (a service URL given with its prefix), and the
    crawler's log said no more."""
    path = request.path if len(request.path) <= 200 else request.path[:200] + "..."
    if response.status_code == 405:
        allowed = response.get("Allow")
        return f"the method {request.method} is not taken at {path}" + (f", which takes {allowed}" if allowed else "")
    if response.status_code != 404:
        return response.reason_phrase
    hint = ""
    if request.path_info.count(API_V1) > 1:
        hint = f" ({API_V1} twice: the service's URL is its root, without {API_V1})"
    elif request.path_info.endswith("/") and _is_endpoint(request.path_info.rstrip("/")):
        hint = f" (without the trailing slash: {request.path.rstrip('/')})"
    return f"no API endpoint at {path}{hint}; the endpoints are listed at {API_V1}/docs"


def _is_endpoint(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def _as_json_error(response: HttpResponse, detail: str) -> JsonResponse:
    replacement = JsonResponse({"detail": detail, "errors": []}, status=response.status_code)
    for name, value in response.items():
        if name.lower() not in _DROPPED_HEADERS:
            replacement[name] = value
    return replacement
