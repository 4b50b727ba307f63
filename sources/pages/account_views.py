"""The public account pages that need more than Django gives: the password-reset form mails whoever
is named in it, so each address may ask only so often (and nobody, 503, while the cache that counts
is down); the login page names the demo login only where the demo data made one, and only to this
machine."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.views import LoginView, PasswordResetView
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from ninja.errors import Throttled

from completeness.web import throttle
from completeness.web.security import from_this_machine
from sources.demo import DEMO_USERNAME
from sources.ingest.errors import RETRY_AFTER_SECONDS


class ThrottledPasswordResetView(PasswordResetView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            throttle.PASSWORD_RESETS.hit(throttle.client_address(request))
        except Throttled as exc:
            return HttpResponse(
                render_to_string("429.html", {"wait": exc.wait}), status=429, headers={"Retry-After": str(exc.wait)}
            )
        except throttle.Uncounted:
            return HttpResponse(
                render_to_string("503.html", {"unreachable": "The cache that counts password resets"}),
                status=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        return super().post(request, *args, **kwargs)


class LoginNamingTheDemo(LoginView):
    """Django's login page, which names demo / demo only where that user exists: a deployment without
    the demo data advertised a login it did not have."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        # Named to this machine alone: from elsewhere its public password is refused (sources/demo/backend.py).
        context["demo_login"] = (
            from_this_machine(self.request) and get_user_model().objects.filter(username=DEMO_USERNAME).exists()
        )
        return context
