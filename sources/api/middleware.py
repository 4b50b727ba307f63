"""Answers for what no single view handles: the database going away, and API errors that Django or
ninja would otherwise give as HTML or plain text (unknown paths, wrong methods, server errors)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from sources.ingest.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
DATABASE_DOWN: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
# Headers of the original answer that still hold for its JSON replacement.
_DROPPED_HEADERS = {"content-type", "content-length"}


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
            return _as_json_error(response)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_DOWN):
            logger.warning("database unavailable, answering 503: %s", exception)
            return database_unavailable(request)
        return None


def _as_json_error(response: HttpResponse) -> JsonResponse:
    replacement = JsonResponse({"detail": response.reason_phrase, "errors": []}, status=response.status_code)
    for name, value in response.items():
        if name.lower() not in _DROPPED_HEADERS:
            replacement[name] = value
    return replacement
