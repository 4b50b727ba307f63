"""The broken-channel banner's data, on every page (templates/alerts/_broken_banner.html)."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from sources.alerts import watch


def broken_channels(request: HttpRequest) -> dict:
    """Logged-in users only; one query over the channels table, run only if a template asks (a page
    rendered without base.html, or an API answer, pays nothing)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"broken_channels": SimpleLazyObject(lambda: list(watch.broken_channels()))}
