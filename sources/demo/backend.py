"""The demo login's public password signs in only from this machine.

`manage.py seed_demo` makes the superuser demo / demo, and the README and the login page say so. Where
the service is reached from elsewhere (bin/serve on 127.0.0.1 behind a reverse proxy, the Procfile's
web on 0.0.0.0 after seed_demo), that password gave anyone the admin: tokens, channels, every run.
Listed before Django's ModelBackend: refusing here ends the login, as a wrong password does (and
django-axes counts it). The demo user with a password of its own signs in from anywhere.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from completeness.web.security import from_this_machine
from sources.demo import DEMO_USERNAME


class DemoLoginFromThisMachineOnly:
    # Not a BaseBackend: its get_user (None for everyone) would make it the backend Django's test
    # client logs users in with; this one only ever refuses.
    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        if username == DEMO_USERNAME and password == DEMO_USERNAME and request is not None:
            if not from_this_machine(request):
                raise PermissionDenied("the demo login's public password signs in only from this machine")
        return None
