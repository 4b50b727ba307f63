"""Answers for what no single view handles: API errors that Django or ninja would otherwise give as
HTML or plain text (unknown paths, wrong methods, server errors)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"
# Headers of the original answer that still hold for its JSON replacement.
_DROPPED_HEADERS = {"content-type", "content-length"}


class ErrorResponsesMiddleware:
    def __init__(self, get_response):
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


def _as_json_error(response: HttpResponse) -> JsonResponse:
    replacement = JsonResponse({"detail": response.reason_phrase, "errors": []}, status=response.status_code)
    for name, value in response.items():
        if name.lower() not in _DROPPED_HEADERS:
            replacement[name] = value
    return replacement
